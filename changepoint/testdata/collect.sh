#!/usr/bin/env bash
# collect.sh: the real noise and the replayed slowdown that the tests read.
#
#   bash changepoint/testdata/collect.sh noise  DIR   # RUNS (100) runs of allreduce_perf
#   bash changepoint/testdata/collect.sh replay DIR   # NORMAL (30) runs, then SLOW (15) with GCCL_BUFFSIZE=65536
#
# Each run is a separate process with the sweep of this project's CI gate
# (ci/perf-gate.sh): 2 ranks on 2 threads, 8 B to 4 MiB by 8, each size
# timed until its median is known within 2% (at most 1 s), out of place, 3
# cycles; PAUSE (2) seconds between runs; FLAGS replaces the sweep. PROCS
# (1) processes back to back make one run, their records in one file: 8 is
# what the gate adds to a history per CI job (ci/perf-gate.sh --runs). Then
# summarize.py turns DIR's files into the JSON the tests read:
#   python3 changepoint/testdata/summarize.py OUT.json NOTE NAME='DIR/ar-*.jsonl' ...
set -eu
what=${1:?noise or replay}; dir=${2:?output directory}
mkdir -p "$dir"
ar=${AR:-}
if [ -z "$ar" ]; then # AR: a built allreduce_perf (a machine without Go)
	mkdir -p /tmp/cp-bin && go build -o /tmp/cp-bin/ar ./cmd/allreduce_perf && ar=/tmp/cp-bin/ar
fi
read -r -a flags <<<"${FLAGS:--t 2 -b 8 -e 4M -f 8 --precision 2% --max-time 1s --out-of-place-only -N 3}"
run() {
	local p
	: >"$dir/ar-$1.jsonl"
	for p in $(seq "${PROCS:-1}"); do
		"$ar" "${flags[@]}" --force --out "$dir/ar-$1.part" >/dev/null
		cat "$dir/ar-$1.part" >>"$dir/ar-$1.jsonl"
	done
	rm -f "$dir/ar-$1.part"
	sleep "${PAUSE:-2}"
}
case $what in
noise)
	for i in $(seq -w 0 $((${RUNS:-100} - 1))); do run "$i"; done ;;
replay)
	n=${NORMAL:-30}; s=${SLOW:-15}
	for i in $(seq -w 0 $((n + s - 1))); do
		if ((10#$i < n)); then (unset GCCL_BUFFSIZE; run "$i"); else (export GCCL_BUFFSIZE=65536; run "$i"); fi
	done ;;
*) echo "collect.sh: $what: want noise or replay" >&2; exit 2 ;;
esac
