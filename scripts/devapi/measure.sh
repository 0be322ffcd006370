#!/usr/bin/env bash
# devapi/measure.sh: nccl-tests' -D kernels on the embedded stack beside the
# stack's own collectives, side by side: every configuration in turn, ROUNDS
# (5) rounds, -I 1 medians (PERITER=0: the plain loop's means) to JSONL in OUT; summarise with
# python3 scripts/devapi/summary.py OUT.
#
#   BIN=dir OUT=dir [RANKS="2 4"] [ROUNDS=5] [THREADS=1] [CONFIGS="ar-D2V1 ..."] bash scripts/devapi/measure.sh
#
# BIN holds builds of cmd/allreduce_perf and cmd/alltoall_perf. THREADS=1
# gives each rank a thread of its own (-t N -g 1: launches run inline on
# it) instead of one thread driving every rank (-g N, as nccl-tests runs
# one process's GPUs). CONFIGS picks configurations by name (default all).
set -u
BIN=${BIN:?}; OUT=${OUT:-devapi-out}; mkdir -p "$OUT"
common=(-b "${MINBYTES:-8}" -e 64K -f "${STEP:-2}" -n "${ITERS:-100}" -w 20 -c 0 --out-of-place-only)
# PERITER=0: the plain loop's mean (time_us) instead of -I 1's medians
[ "${PERITER:-1}" != 0 ] && common+=(-I 1)
for round in $(seq "${ROUNDS:-5}"); do
	for g in ${RANKS:-2 4}; do
		lay=(-g "$g")
		[ -n "${THREADS:-}" ] && lay=(-t "$g" -g 1)
		run() {
			local name=$1; shift
			[ -n "${CONFIGS:-}" ] && [[ " $CONFIGS " != *" $name "* ]] && return
			${TIMEOUT:+timeout "$TIMEOUT"} "$@" "${common[@]}" "${lay[@]}" --out "$OUT/$name.g$g.r$round.jsonl" >/dev/null || echo "$name g$g: rc=$?"
		}
		run ar-D2V1 "$BIN/allreduce_perf" -R 2 -D 2 -V 1
		run ar-D2V4 "$BIN/allreduce_perf" -R 2 -D 2 -V 4
		run ar-D2V16 "$BIN/allreduce_perf" -R 2 -D 2 -V 16
		run ar-D1V1 "$BIN/allreduce_perf" -R 2 -D 1 -V 1
		run ar-auto "$BIN/allreduce_perf"
		run ar-oneshot "$BIN/allreduce_perf" --algo OneShot
		run a2a-D2V1 "$BIN/alltoall_perf" -R 2 -D 2 -V 1
		run a2a-D2V16 "$BIN/alltoall_perf" -R 2 -D 2 -V 16
		run a2a-host "$BIN/alltoall_perf"
	done
done
