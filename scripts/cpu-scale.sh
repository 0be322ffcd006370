#!/usr/bin/env bash
# cpu-scale.sh: the embedded stack on a many-core host beside Open MPI
# (issue 19): small-size allreduce latency at 2/4/8/16 ranks, one goroutine
# per rank (-t N) and one process per rank (--np N), against mpi_perf under
# mpirun; then per rank count a sweep of auto and forced configurations
# 8 B..128 MiB, and Open MPI's large sizes.
#
#   BIN=dir OUT=dir bash scripts/cpu-scale.sh [latency] [sweep] [small] [ab] [floor]
#
# small: the sweep's configurations at 8 B..32 KiB with 500 iterations.
# ab:    small's sweep with BIN/allreduce_perf_base and BIN/allreduce_perf
#        alternating, PASSES times (a change measured side by side).
# floor: small-size latency (8 B..512 B) side by side, PASSES times: Open
#        MPI, BIN/allreduce_perf_base and BIN/allreduce_perf with -t N, the
#        latter with --np N too (the "nopf" variant ran a build whose
#        one-shot prefetch GCCL_X_NOPREFETCH=1 turned off: 6b2a769..32240d4).
# npg:   --np N with the launcher's GOMAXPROCS and with GOMAXPROCS=cores/N,
#        8 B..512 B and 32 MiB, alternating PASSES times.
# scale: issue 41's tables: allreduce 8 B..SCALE_MAX (128M) by 4 at SCALE_RANKS
#        (2 4 8 16 32 48 64, those up to the cores), one goroutine per rank
#        (-t N), one goroutine for all (-g N) and one process per rank
#        (--np N), each back to back and after a pause (-z 2), --precision 5%
#        --max-time 200ms per size, -a 3; Open MPI's mpi_perf beside it (3
#        reps). Records in OUT/scale/*.jsonl, mpi_perf's text in OUT/scale/,
#        the tables by scripts/cpu-scale-summary.py --scale OUT/scale.
#        SCALE_ITERS (50) and SCALE_WARMUP (20) set -n and -w (64 ranks at
#        128 MiB take ~0.3 s an operation: 20 and 5 fit a 9-minute call
#        better); DEADLINE (seconds from the start) skips the runs that
#        would not fit, and the archive is written either way.
# abscale: BIN/allreduce_perf_base ("base") beside BIN/allreduce_perf ("new"),
#        a change measured side by side: variants with -t N back to back and -z 2
#        and --np N, PASSES (2) passes, mpi_perf beside (3 reps); OUT/abscale/.
# timing: issue 41's "per-iteration timing measures the same thing": at
#        SCALE_RANKS, -t N, 8 B..TIMING_MAX (2M) by 4, the plain loop (-n
#        TIMING_ITERS (1000) -w 100), -I 1 with the same counts, and
#        --precision 5% --max-time 200ms, PASSES (2) passes alternating;
#        records in OUT/timing/, the table by scripts/cpu-scale-summary.py
#        --timing OUT/timing.
# variants: BIN/allreduce_perf under VARIANTS ("name:VAR=v,VAR=v ..."; "base"
#        runs BIN/allreduce_perf_base) at SCALE_RANKS (32 16 8), MODES ("tb2b
#        tz2"; npb2b: --np N), PASSES (1) alternating, 8 B..AB_MAX (2M) by 4,
#        --precision 5% --max-time 200ms, AB_TIMEOUT (120 s) a run; MPI=1 runs
#        mpi_perf beside. OUT/variants/; tables by
#        scripts/cpu-scale-summary.py --variants OUT/variants (or OUT/abscale).
# spin:  the host's floor for N busy-polling threads, no library in the way
#        (scripts/spinring/spinring.c): a token round a ring of N spinning
#        threads and a barrier of N, 2000 rounds, at SCALE_RANKS; OUT/spin.txt.
# diag:  the cliffs' causes at DIAG_RANKS (8 32 64), -t N: the picks
#        (GCCL_DEBUG=INFO, counted), forced configurations 8 B..2M by 4, CPU
#        profiles and a Go execution trace at 128 KiB back to back and after
#        a pause (-z 2); everything in OUT/diag.tgz.
#
# BIN holds CGO_ENABLED=0 builds of cmd/allreduce_perf and docs/data/peers/mpi_perf.c.
set -u
T0=$(date +%s)
BIN=${BIN:?}; OUT=${OUT:-cpu-out}; mkdir -p "$OUT"
STEPS=${*:-latency sweep}
RANKS=${RANKS:-2 4 8 16}
has() { [[ " $STEPS " == *" $1 "* ]]; }
log() { echo "=== $* ($(date +%T))"; }
mpicc -O2 -o /tmp/mpi_perf "$BIN/mpi_perf.c" || exit 1
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"
log "$(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p')"
if has latency; then
	for pass in 1 2 3; do
		for n in $RANKS; do
			log "mpi n=$n pass=$pass"
			timeout 60 $MPIRUN -np "$n" /tmp/mpi_perf allreduce 8 1024 5
			for mode in t np; do
				log "gccl-$mode n=$n pass=$pass"
				if [ $mode = t ]; then args=(-t "$n" -g 1); else args=(--np "$n"); fi
				timeout 90 "$BIN/allreduce_perf" "${args[@]}" -b 8 -e 1K -f 8 -n 5000 -w 500 -z 2 -c 0 -a 3 -N 3 --out-of-place-only
			done
		done
	done >"$OUT/latency.txt" 2>&1
fi
if has sweep; then
	for n in $RANKS; do
		log "mpi large n=$n"
		timeout 120 $MPIRUN -np "$n" /tmp/mpi_perf allreduce 8 134217728 5
		log "gccl sweep n=$n"
		timeout 400 "$BIN/allreduce_perf" -t "$n" -g 1 -b 8 -e 128M -f 8 -n 5 -w 2 -c 0 -a 3 --out-of-place-only \
			--configs auto,OneShot/LL/1,Ring/LL/1,Ring/LL128/auto,Ring/Simple/auto,Tree/LL/1,Tree/Simple/auto \
			--out "$OUT/sweep_n$n.jsonl"
	done >"$OUT/sweep.txt" 2>&1
fi
if has small; then
	for n in $RANKS; do
		log "gccl small sweep n=$n"
		timeout 200 "$BIN/allreduce_perf" -t "$n" -g 1 -b 8 -e 32K -f 8 -n 500 -w 50 -c 0 -a 3 --out-of-place-only \
			--configs auto,OneShot/LL/1,Ring/LL/1,Ring/LL128/auto,Ring/Simple/auto,Tree/LL/1,Tree/Simple/auto \
			--out "$OUT/small_n$n.jsonl"
	done >"$OUT/small.txt" 2>&1
fi
if has ab; then
	for pass in $(seq "${PASSES:-2}"); do
		for n in $RANKS; do
			for b in base new; do
				bin="$BIN/allreduce_perf"
				[ $b = base ] && bin="$BIN/allreduce_perf_base"
				log "ab $b n=$n pass=$pass"
				timeout 200 "$bin" -t "$n" -g 1 -b 8 -e 32K -f 8 -n 500 -w 50 -c 0 -a 3 --out-of-place-only \
					--configs auto,OneShot/LL/1,Ring/LL/1,Ring/LL128/auto,Ring/Simple/auto,Tree/LL/1,Tree/Simple/auto
			done
		done
	done >"$OUT/ab.txt" 2>&1
fi
if has floor; then
	for pass in $(seq "${PASSES:-3}"); do
		for n in $RANKS; do
			log "floor mpi n=$n pass=$pass"
			timeout 60 $MPIRUN -np "$n" /tmp/mpi_perf allreduce 8 1024 5
			for v in base new np; do
				bin="$BIN/allreduce_perf" env=() args=(-t "$n" -g 1)
				case $v in
				base) bin="$BIN/allreduce_perf_base" ;;
				np) args=(--np "$n") ;;
				esac
				log "floor $v n=$n pass=$pass"
				env "${env[@]}" timeout 90 "$bin" "${args[@]}" -b 8 -e 512 -f 8 -n 5000 -w 500 -z 2 -c 0 -a 3 -N 3 --out-of-place-only
			done
		done
	done >"$OUT/floor.txt" 2>&1
fi
if has npg; then
	for pass in $(seq "${PASSES:-3}"); do
		for n in $RANKS; do
			for v in np share; do
				env=()
				[ $v = share ] && env=(GOMAXPROCS=$(( $(nproc) / n > 0 ? $(nproc) / n : 1 )))
				log "floor $v n=$n pass=$pass"
				env "${env[@]}" timeout 90 "$BIN/allreduce_perf" --np "$n" -b 8 -e 512 -f 8 -n 5000 -w 500 -z 2 -c 0 -a 3 -N 3 --out-of-place-only
				env "${env[@]}" timeout 90 "$BIN/allreduce_perf" --np "$n" -b 32M -e 32M -n 10 -w 2 -z 2 -c 0 -a 3 -N 3 --out-of-place-only
			done
		done
	done >"$OUT/npg.txt" 2>&1
fi
# summarize STEP: the step's table (cpu-scale-summary.py --STEP) into
# OUT/STEP/summary.txt, and OUT/STEP archived in OUT/STEP.tgz.
summarize() {
	python3 "$(dirname "$0")/cpu-scale-summary.py" "--$1" "$OUT/$1" >"$OUT/$1/summary.txt" 2>&1
	tar czf "$OUT/$1.tgz" -C "$OUT" "$1" && log "archive $OUT/$1.tgz"
}
# secs_left: the seconds left of DEADLINE (from the start).
secs_left() { echo $((${DEADLINE:-100000} - ($(date +%s) - T0))); }
if has scale; then
	mkdir -p "$OUT/scale"
	max=${SCALE_MAX:-128M}
	for n in ${SCALE_RANKS:-2 4 8 16 32 48 64}; do
		[ "$n" -le "$(nproc)" ] || continue
		left=$(secs_left)
		[ "$left" -ge 30 ] || { log "scale n=$n: skipped, ${left}s left of DEADLINE"; continue; }
		log "scale mpi n=$n"
		timeout $((left < 200 ? left / 3 : 200)) $MPIRUN -np "$n" /tmp/mpi_perf allreduce 8 "$(numfmt --from=iec "$max")" 3 >"$OUT/scale/mpi_n$n.txt" 2>&1
		for mode in t g np; do
			case $mode in t) args=(-t "$n" -g 1) ;; g) args=(-t 1 -g "$n") ;; np) args=(--np "$n") ;; esac
			for wait in b2b z2; do
				z=()
				[ $wait = z2 ] && z=(-z 2)
				left=$(secs_left)
				if [ "$left" -lt 20 ]; then
					log "scale gccl -$mode n=$n $wait: skipped, ${left}s left of DEADLINE"
					continue
				fi
				log "scale gccl -$mode n=$n $wait"
				timeout $((left < 300 ? left - 10 : 300)) "$BIN/allreduce_perf" "${args[@]}" "${z[@]}" -b 8 -e "$max" -f 4 -n "${SCALE_ITERS:-50}" -w "${SCALE_WARMUP:-20}" -c 0 -a 3 \
					--precision 5% --max-time 200ms --out-of-place-only --out "$OUT/scale/gccl_${mode}_${wait}_n$n.jsonl" --force \
					>"$OUT/scale/gccl_${mode}_${wait}_n$n.txt" 2>&1 || log "rc=$?"
			done
		done
	done
	summarize scale
fi
if has timing; then
	mkdir -p "$OUT/timing"
	for n in ${SCALE_RANKS:-2 4 8 16}; do
		[ "$n" -le "$(nproc)" ] || continue
		for pass in $(seq "${PASSES:-2}"); do
			for mode in plain i1 prec; do
				case $mode in
				plain) args=(-n "${TIMING_ITERS:-1000}" -w 100) ;;
				i1) args=(-n "${TIMING_ITERS:-1000}" -w 100 -I 1) ;;
				prec) args=(-n 50 -w 20 --precision 5% --max-time 200ms) ;;
				esac
				left=$(secs_left)
				[ "$left" -ge 20 ] || { log "timing $mode n=$n: skipped, ${left}s left of DEADLINE"; continue; }
				log "timing $mode n=$n pass=$pass"
				timeout $((left < 120 ? left - 10 : 120)) "$BIN/allreduce_perf" -t "$n" -g 1 -b 8 -e "${TIMING_MAX:-2M}" -f 4 -c 0 -a 3 \
					--out-of-place-only "${args[@]}" --out "$OUT/timing/${mode}_n${n}_p$pass.jsonl" --force \
					>"$OUT/timing/${mode}_n${n}_p$pass.txt" 2>&1 || log "rc=$?"
			done
		done
	done
	summarize timing
fi
# variants_step DIR VARIANTS MODES PASSES MPI: the builds and environments of
# VARIANTS at SCALE_RANKS, each of MODES (tb2b: -t N back to back, tz2: -t N
# -z 2, npb2b: --np N), PASSES times alternating, 8 B..AB_MAX by 4,
# --precision 5% --max-time 200ms, AB_TIMEOUT a run; Open MPI beside when
# MPI is 1. Records DIR/NAME_MODE_nN_pK.jsonl.
variants_step() {
	local dir=$1 variants=$2 modes=$3 passes=$4 mpi=$5 n pass mode v name bin env args
	mkdir -p "$dir"
	for n in ${SCALE_RANKS:-32 16 8}; do
		[ "$n" -le "$(nproc)" ] || continue
		if [ "$mpi" = 1 ]; then
			log "$(basename "$dir") mpi n=$n"
			timeout 120 $MPIRUN -np "$n" /tmp/mpi_perf allreduce 8 "$(numfmt --from=iec "${AB_MAX:-2M}")" 3 >"$dir/mpi_n$n.txt" 2>&1
		fi
		for pass in $(seq "$passes"); do
			for mode in $modes; do
				for v in $variants; do
					name=${v%%:*} bin="$BIN/allreduce_perf" env=()
					[ "$name" = base ] && bin="$BIN/allreduce_perf_base"
					[ "$v" != "$name" ] && IFS=, read -r -a env <<<"${v#*:}"
					case $mode in tb2b) args=(-t "$n" -g 1) ;; tz2) args=(-t "$n" -g 1 -z 2) ;; npb2b) args=(--np "$n") ;; esac
					log "$(basename "$dir") $name $mode n=$n pass=$pass"
					env "${env[@]}" timeout "${AB_TIMEOUT:-120}" "$bin" "${args[@]}" -b 8 -e "${AB_MAX:-2M}" -f 4 -n 50 -w 10 -c 0 -a 3 \
						--precision 5% --max-time 200ms --out-of-place-only \
						--out "$dir/${name}_${mode}_n${n}_p$pass.jsonl" --force >"$dir/${name}_${mode}_n${n}_p$pass.txt" 2>&1 || log "rc=$?"
				done
			done
		done
	done
	tar czf "$dir.tgz" -C "$(dirname "$dir")" "$(basename "$dir")" && log "archive $dir.tgz"
}
if has variants; then
	variants_step "$OUT/variants" "${VARIANTS:-base}" "${MODES:-tb2b tz2}" "${PASSES:-1}" "${MPI:-0}"
fi
if has spin; then
	cc -O2 -pthread -o /tmp/spinring "$(dirname "$0")/spinring/spinring.c" || exit 1
	for n in ${SCALE_RANKS:-2 4 8 16 32 48 64}; do
		[ "$n" -le "$(nproc)" ] || continue
		for m in ring barrier; do
			timeout 15 /tmp/spinring $m "$n" 2000 || echo "$m threads $n: rc=$?"
		done
	done >"$OUT/spin.txt" 2>&1
	cat "$OUT/spin.txt"
fi
if has abscale; then
	variants_step "$OUT/abscale" "base new" "tb2b tz2 npb2b" "${PASSES:-2}" 1
fi
if has diag; then
	D=$OUT/diag
	mkdir -p "$D"
	for n in ${DIAG_RANKS:-8 32 64}; do
		[ "$n" -le "$(nproc)" ] || continue
		log "diag picks n=$n"
		GCCL_DEBUG=INFO timeout 120 "$BIN/allreduce_perf" -t "$n" -g 1 -b 8 -e 2M -f 4 -n 3 -w 1 -c 0 --out-of-place-only 2>&1 |
			sed 's|rank [0-9]*/|rank */|' | sort | uniq -c >"$D/picks_n$n.txt"
		log "diag configs n=$n"
		timeout 240 "$BIN/allreduce_perf" -t "$n" -g 1 -b 8 -e 2M -f 4 -n 50 -w 10 -c 0 -a 3 --out-of-place-only -I 1 \
			--configs auto,OneShot/LL/1,Ring/LL/1,Ring/LL128/auto,Ring/Simple/auto,Ring/Simple/1,Tree/LL/1,Tree/Simple/auto \
			--out "$D/configs_n$n.jsonl" --force >"$D/configs_n$n.txt" 2>&1 || log "rc=$?"
		for wait in b2b z2; do
			z=()
			[ $wait = z2 ] && z=(-z 2)
			log "diag profile n=$n $wait"
			timeout 120 "$BIN/allreduce_perf" -t "$n" -g 1 "${z[@]}" -b 128K -e 128K -n 500 -w 20 -c 0 -a 3 -I 1 --out-of-place-only \
				--cpuprofile "$D/cpu_${wait}_n$n.prof" >"$D/profile_${wait}_n$n.txt" 2>&1 || log "rc=$?"
			timeout 60 "$BIN/allreduce_perf" -t "$n" -g 1 "${z[@]}" -b 128K -e 128K -n 20 -w 5 -c 0 -a 3 --out-of-place-only \
				--trace "$D/trace_${wait}_n$n.out" >"$D/trace_${wait}_n$n.txt" 2>&1 || log "rc=$?"
		done
	done
	tar cJf "$OUT/diag.txz" -C "$OUT" diag && log "archive $OUT/diag.txz ($(du -h "$OUT/diag.txz" | cut -f1))"
fi
log done
