#!/usr/bin/env bash
# gpu-compare.sh: gccl's NCCL backend against nccl-tests on every GPU of this
# machine, one thread driving them all (-g N), in one bounded call (issue 40):
# what each times, its host cost, and what loading gccl's tuner plugin with no
# rules costs.
#
#   BIN=bin NCCL_TESTS_TGZ=bin/nccl-tests-2.19.6.tar.gz OUT=dir bash scripts/gpu-compare.sh [steps]
#
# BIN holds a CGO_ENABLED=0 build of cmd/tune (tune _perf runs every perf
# binary). nccl-tests is built from NCCL_TESTS_TGZ against the installed
# libnccl (kept in /tmp/nccl-tests while the machine stays up).
#
# steps, run in the order logs, small, cputime, large, graph, g1 whatever order
# they are named in (default: logs small; a second call: cputime large graph g1):
#   small    every collective -g N, 8 B-8 MiB by 4, -n 200 -w 20 -c 0, PASSES (3)
#            passes, the order of the variants rotated from pass to pass:
#              nt          nccl-tests
#              gccl        tune _perf --backend nccl
#              plugin      gccl with gccl's tuner plugin and a file of no rules
#              cudamalloc  gccl on cudaMalloc buffers (GCCL_NCCL_ALLOC; the default
#                          is ncclMemAlloc, as nccl-tests) - allreduce, allgather, sendrecv
#              purego      gccl calling through purego.SyscallN (GCCL_NCCL_CALL) -
#                          allreduce, sendrecv
#              ntplugin    nccl-tests with the same plugin and file - allgather
#              ntpin, gcclpin  nccl-tests and gccl under taskset -c PINCPUS (GPU 0's CPUs from
#                          nvidia-smi topo -m): where the driving thread runs, held fixed -
#                          allreduce, sendrecv
#            EXTRA_VARIANTS="name:VAR=value ..." adds gccl variants (allreduce, sendrecv)
#   large    every collective, 32 MiB-1 GiB by 2, -n 20 -w 5, LARGE_PASSES (2): nt, gccl, plugin
#   graph    -G 1 (CUDA graphs), allreduce, allgather, sendrecv, 8 B-8 MiB by 4,
#            -n 100 -w 10, GRAPH_PASSES (2): nt, gccl, cudamalloc - the time of the
#            GPUs' work with the launches' host cost amortised
#   cputime  -C 1 (nccl-tests' cputime: host time to the last enqueue), allreduce,
#            allgather, sendrecv, small sizes, CPU_PASSES (2): nt, gccl
#   g1       -g 1 (GPU 0) allreduce and sendrecv, small sizes, -n G1_ITERS (200),
#            G1_PASSES (3): nt, gccl and G1_VARIANTS (e.g. gcclold: $BIN/tune-old, another build)
#   hostcost -g 1 host cost bisected (scripts/hostcost/nccl-hostcost.c): one ncclAllReduce call
#            a loop of HC_ITERS (1000), 8 B and 64 KiB, with NCCL initialised
#            as nccl-tests does or as gccl does, on ncclMemAlloc or cudaMalloc
#            buffers, beside nt and gccl -g 1 -n HC_ITERS -C 1; HC_PASSES (3)
#   rusage   -g 1 allreduce 8 B at RU_SHORT (2000) and RU_LONG (100000) iterations under
#            scripts/hostcost/rusage.py, RU_PASSES (3): nt, gccl and RU_VARIANTS (names of
#            EXTRA_VARIANTS): the host's CPU time, context switches and threads a call
#   logs     NCCL's choices (NCCL_DEBUG_SUBSYS=TUNING,INIT,ENV), every collective,
#            8 B-8 MiB by 4, -n 2 -w 1: nt, gccl, plugin
#   live     a table from a 4-GPU sweep (tune sweep --backend nccl, LIVE_COLLS,
#            every algorithm x protocol and NCCL's own, 8 B-LIVE_MAX by 4, 2 repeats;
#            tune table), then tune validate --live: each rule through the
#            plugin against no plugin on held-out sizes, LIVE_PASSES (3) passes
#   np       one process per GPU, NP_COLLS, -b 8 -e 256M -f 8 -n 50 -w 10,
#            NP_PASSES (3): ntmpi (nccl-tests built with MPI=1 under mpirun -np N),
#            gcclnp (--np N), gcclmpi (gccl under mpirun -np N); NP_VARIANTS may add
#            gcclmpig (under mpirun, GOMAXPROCS its share of the CPUs) and
#            gcclnpunbound (--np N --bind-to none) and gcclnpold ($BIN/tune-old, another
#            build, --np N)
#   hosts    the N processes as 2 nodes (NCCL_HOSTID per pair, sockets on
#            loopback), allreduce and allgather, -b 8 -e 64M -f 8 -n 20 -w 5,
#            HOSTS_PASSES (2): nthosts (mpirun, NCCL_HOSTID by a wrapper), gcclhosts
#            (--np N --hosts 2); and one logged run each (nNodes in NCCL's log
#            and the plugin's)
# WRAP (e.g. "taskset -c 8-15") prefixes every timed command of every variant;
# SMALL_VARIANTS (e.g. "nt gccl plugin") replaces the small step's variants.
# COLLS (e.g. "all_reduce broadcast") limits the steps that run every collective.
#
# Everything lands in ONE archive, $OUT/compare_<steps>.tgz (raw outputs,
# NCCL logs, timing, machine, summary), and the summary (median tables,
# scripts/gpu-compare-summary.py) is printed at the end. Every run has its own
# timeout and the whole script a deadline (DEADLINE, 540 s): a step that would
# not fit is skipped and says so; a failed run is logged, never fatal.
# NVLink multicast stays off.
set -u
T0=$(date +%s)
DEADLINE=${DEADLINE:-540}
RESERVE=${RESERVE:-25} # kept for the summary and the archive
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BIN=${BIN:?BIN: the folder with a CGO_ENABLED=0 build of cmd/tune}
OUT=${OUT:-gpu-out}
STEPS=${*:-logs small}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/gpu-compare.XXXXXX)
mkdir -p "$OUT" "$W/raw" "$W/logs"
has() { [[ " $STEPS " == *" $1 "* ]]; }
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
log() { echo "=== $* (t+$(($(date +%s) - T0))s)" | tee -a "$W/timing.txt"; }

N=${NGPUS:-$(nvidia-smi -L 2>/dev/null | wc -l)}
export GCCL_NCCL_LIBRARY=${GCCL_NCCL_LIBRARY:-$(readlink -f /usr/lib/x86_64-linux-gnu/libnccl.so.2)}
export GCCL_CUDART_LIBRARY=${GCCL_CUDART_LIBRARY:-$(readlink -f "$(ls /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.[0-9]* 2>/dev/null | head -1)")}
log "$N GPUs; NCCL $GCCL_NCCL_LIBRARY; CUDA runtime $GCCL_CUDART_LIBRARY; steps: $STEPS"
{
	date -u
	nvidia-smi 2>&1 | head -20
	nvidia-smi topo -m 2>&1
	nproc
	lscpu 2>&1 | head -20
	"$BIN/tune" _perf all_reduce_perf --version 2>&1
	env | grep -E '^(NCCL|GCCL|CUDA)_' | sort
} >"$W/machine.txt" 2>&1

# nccl-tests against the installed libnccl.
NT=${NT_DIR:-/tmp/nccl-tests}
NT_BINS="all_reduce all_gather reduce_scatter broadcast reduce sendrecv"
build_nt() {
	local missing=0 b
	for b in $NT_BINS; do [ -x "$NT/build/${b}_perf" ] || missing=1; done
	[ $missing = 0 ] && return 0
	log "build nccl-tests ($NT_BINS)"
	mkdir -p $NT /tmp/ncclhome/lib
	[ -f $NT/src/common.cu ] || tar xzf "${NCCL_TESTS_TGZ:-$BIN/nccl-tests-2.19.6.tar.gz}" -C $NT --strip-components=1
	ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so
	ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so.2
	ln -sfn /usr/include /tmp/ncclhome/include
	(cd $NT && timeout -s KILL $(($(left) - RESERVE)) make -j"$(nproc)" MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/tmp/ncclhome \
		BIN_FILES_LIST="$NT_BINS" NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$W/build.log" 2>&1)
	local rc=$?
	log "build rc=$rc"
	[ $rc = 0 ] || tail -20 "$W/build.log"
}
export LD_LIBRARY_PATH=/tmp/ncclhome/lib:${LD_LIBRARY_PATH:-}
# nccl-tests with MPI=1 (one process per GPU under mpirun), in $NT-mpi; Open
# MPI's include and lib folders as mpicc names them.
NTM=$NT-mpi
NTM_BINS="all_reduce all_gather reduce_scatter broadcast reduce sendrecv"
build_ntm() {
	[ -x "$NTM/build/sendrecv_perf" ] && return 0
	mkdir -p $NTM /tmp/mpihome /tmp/ncclhome/lib
	[ -f $NTM/src/common.cu ] || tar xzf "${NCCL_TESTS_TGZ:-$BIN/nccl-tests-2.19.6.tar.gz}" -C $NTM --strip-components=1
	ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so
	ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so.2
	ln -sfn /usr/include /tmp/ncclhome/include
	ln -sfn "$(mpicc --showme:incdirs | awk '{print $1}')" /tmp/mpihome/include
	ln -sfn "$(mpicc --showme:libdirs | awk '{print $1}')" /tmp/mpihome/lib
	(cd $NTM && timeout -s KILL 200 make -j"$(nproc)" MPI=1 MPI_HOME=/tmp/mpihome CUDA_HOME=/usr/local/cuda NCCL_HOME=/tmp/ncclhome \
		BIN_FILES_LIST="$NTM_BINS" NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$W/build-mpi.log" 2>&1)
	echo "build-mpi rc=$?" >>"$W/build-mpi.log"
}
MPIRUN="mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -np $N -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x GCCL_NCCL_LIBRARY -x GCCL_CUDART_LIBRARY"
# hostwrap: NCCL_HOSTID per pair of Open MPI ranks (2 simulated nodes), sockets on loopback.
HOSTWRAP=$W/hostwrap.sh
printf '#!/bin/sh\nexport NCCL_HOSTID=host$((OMPI_COMM_WORLD_RANK / (OMPI_COMM_WORLD_SIZE / 2))) NCCL_SOCKET_IFNAME=lo\nexec "$@"\n' >"$HOSTWRAP"
chmod +x "$HOSTWRAP"

# GPU 0's CPUs (nvidia-smi topo -m's CPU Affinity: the first all-digit field
# of its row after the link columns), for the pinned variants.
PINCPUS=${PINCPUS:-$(nvidia-smi topo -m 2>/dev/null | awk '$1 == "GPU0" { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9][0-9,-]*$/) { print $i; exit } }')}
PINCPUS=${PINCPUS:-0-$(($(nproc) - 1))}
log "pinned variants run on CPUs $PINCPUS"

PLUGIN=$W/libnccl-tuner-gccl.so
EMPTY=$W/no-rules.csv
printf '# no rules: the plugin loaded, NCCL choosing\n' >"$EMPTY"
if has small || has large || has logs || has live || has hosts; then
	"$BIN/tune" plugin --output "$PLUGIN" >"$W/plugin-build.log" 2>&1 || log "plugin build failed: $(tail -3 "$W/plugin-build.log")"
fi

prog() { echo "${1}_perf"; }
# cmd VARIANT COLL ARGS...: the command line of one run (env first).
cmd() {
	local v=$1 c=$2
	shift 2
	local p
	p=$(prog "$c")
	# Without the plugin NCCL would run without a tuner and call it loaded.
	case $v in plugin | ntplugin) [ -f "$PLUGIN" ] || {
		echo "false gccl's tuner plugin was not built ($W/plugin-build.log)"
		return
	} ;;
	esac
	case $v in
	nt) echo "$NT/build/$p $*" ;;
	ntmpi) echo "$MPIRUN $NTM/build/$p $*" ;;
	gcclnp) echo "$BIN/tune _perf $p --backend nccl --np $N $*" ;;
	gcclmpi) echo "$MPIRUN $BIN/tune _perf $p --backend nccl $*" ;;
	gcclmpig) echo "$MPIRUN -x GOMAXPROCS=$(($(nproc) / N)) $BIN/tune _perf $p --backend nccl $*" ;;
	gcclnpunbound) echo "$BIN/tune _perf $p --backend nccl --np $N --bind-to none $*" ;;
	gcclnpold) echo "$BIN/tune-old _perf $p --backend nccl --np $N $*" ;;
	gcclold) echo "$BIN/tune-old _perf $p --backend nccl $*" ;;
	nthosts) echo "$MPIRUN $HOSTWRAP $NTM/build/$p $*" ;;
	gcclhosts) echo "$BIN/tune _perf $p --backend nccl --np $N --hosts 2 $*" ;;
	gcclhostsplugin) echo "$BIN/tune _perf $p --backend nccl --np $N --hosts 2 --tuning-file $EMPTY $*" ;;
	ntplugin) echo "env NCCL_TUNER_PLUGIN=$PLUGIN NCCL_TUNER_CONFIG_FILE=$EMPTY $NT/build/$p $*" ;;
	ntpin) echo "taskset -c $PINCPUS $NT/build/$p $*" ;;
	gcclpin) echo "taskset -c $PINCPUS $BIN/tune _perf $p --backend nccl $*" ;;
	gccl) echo "$BIN/tune _perf $p --backend nccl $*" ;;
	plugin) echo "env NCCL_TUNER_PLUGIN=$PLUGIN $BIN/tune _perf $p --backend nccl --tuning-file $EMPTY $*" ;;
	cudamalloc) echo "env GCCL_NCCL_ALLOC=cudamalloc $BIN/tune _perf $p --backend nccl $*" ;;
	purego) echo "env GCCL_NCCL_CALL=purego $BIN/tune _perf $p --backend nccl $*" ;;
	*) # EXTRA_VARIANTS: name:VAR=value
		local e
		for e in ${EXTRA_VARIANTS:-}; do
			[ "${e%%:*}" = "$v" ] && echo "env ${e#*:} $BIN/tune _perf $p --backend nccl $*" && return
		done
		echo "false unknown-variant-$v"
		;;
	esac
}
# run1 STEP PASS VARIANT COLL TIMEOUT ARGS...: one run, its output in raw/.
run1() {
	local step=$1 pass=$2 v=$3 c=$4 t=$5
	shift 5
	local name="${step}_${c}_${v}_p${pass}" l
	l=$(left)
	if [ $((l - RESERVE)) -lt 8 ]; then
		echo "skip $name: $l s left" >>"$W/timing.txt"
		SKIPPED=$((SKIPPED + 1))
		return
	fi
	[ $t -gt $((l - RESERVE)) ] && t=$((l - RESERVE))
	local c0 line
	c0=$(date +%s%N)
	line="${WRAP:-}${WRAP:+ }$(cmd "$v" "$c" "$@")"
	{
		echo "### $line"
		timeout -s KILL "$t" $line
		echo "### rc=$?"
	} >"$W/raw/$name.txt" 2>&1
	printf '%-40s %6d ms  %s\n' "$name" $((($(date +%s%N) - c0) / 1000000)) "$(tail -1 "$W/raw/$name.txt")" >>"$W/timing.txt"
}
SKIPPED=0
# rotate PASS WORDS...: the words, rotated left by PASS-1.
rotate() {
	local k=$1
	shift
	local a=("$@") n=$# i
	for ((i = 0; i < n; i++)); do printf '%s ' "${a[$(((i + k - 1) % n))]}"; done
}
variants_small() {
	[ -n "${SMALL_VARIANTS:-}" ] && echo "$SMALL_VARIANTS" && return
	local c=$1 v="nt gccl plugin"
	case $c in all_reduce | sendrecv) v="$v cudamalloc purego" ;; all_gather) v="$v cudamalloc" ;; esac
	case $c in all_gather) v="$v ntplugin" ;; esac
	case $c in all_reduce | sendrecv) v="$v ntpin gcclpin" ;; esac
	case $c in all_reduce | sendrecv) for e in ${EXTRA_VARIANTS:-}; do v="$v ${e%%:*}"; done ;; esac
	echo $v
}
COLLS=${COLLS:-all_reduce all_gather reduce_scatter broadcast reduce sendrecv} # the steps that run every collective
SMALL="-b 8 -e 8M -f 4"

# Built before anything is timed: a build on every core would disturb it.
if has np || has hosts; then
	log "build nccl-tests MPI=1 ($NTM_BINS)"
	build_ntm
	log "$(tail -1 "$W/build-mpi.log")"
fi
if has small || has large || has graph || has cputime || has g1 || has logs || has hostcost || has rusage; then build_nt; fi

if has live; then
	LIVE_COLLS=${LIVE_COLLS:-allgather,reducescatter}
	log "live: tune sweep --backend nccl --ranks $N --colls $LIVE_COLLS, then tune table, then tune validate --live"
	t=$(($(left) - RESERVE - 150))
	[ $t -gt "${LIVE_SWEEP_S:-200}" ] && t=${LIVE_SWEEP_S:-200}
	if [ $t -gt 30 ]; then
		timeout -s INT $t "$BIN/tune" sweep --backend nccl --ranks $N --colls "$LIVE_COLLS" --proto all --algo all --nchannels auto \
			-b 8 -e "${LIVE_MAX:-256M}" -f 4 --precision 3% --max-time 200ms --repeat 2 --output "$W/live-train.jsonl" --force >"$W/live-sweep.log" 2>&1
		log "sweep rc=$? ($(wc -l <"$W/live-train.jsonl" 2>/dev/null) records)"
		"$BIN/tune" table "$W/live-train.jsonl" --output "$W/live-table.json" --nccl-csv "$W/live-table.csv" --force >"$W/live-table.txt" 2>&1
		log "table rc=$?: $(tail -1 "$W/live-table.txt")"
		t=$(($(left) - RESERVE - 10))
		[ $t -gt "${LIVE_VALIDATE_S:-150}" ] && t=${LIVE_VALIDATE_S:-150}
		[ -f "$PLUGIN" ] && export NCCL_TUNER_PLUGIN=$PLUGIN
		timeout -s KILL $t "$BIN/tune" validate --live --backend nccl --table "$W/live-table.json" --ranks $N --passes "${LIVE_PASSES:-3}" \
			--points --output "$W/live-kept.json" --nccl-csv "$W/live-kept.csv" --force "$W/live-train.jsonl" >"$W/live-validate.txt" 2>&1
		log "validate rc=$?"
		unset NCCL_TUNER_PLUGIN
		tail -40 "$W/live-validate.txt"
	else
		log "live skipped: $(left) s left"
	fi
fi
if has np; then
	log "np: one process per GPU, ${NP_PASSES:-3} passes"
	for pass in $(seq 1 "${NP_PASSES:-3}"); do
		for c in ${NP_COLLS:-all_reduce all_gather reduce_scatter sendrecv}; do
			for v in $(rotate "$pass" ${NP_VARIANTS:-ntmpi gcclnp gcclmpi}); do
				run1 np "$pass" "$v" "$c" 60 -b 8 -e 256M -f 8 -n 50 -w 10 -c 0
			done
		done
	done
fi
if has hosts; then
	log "hosts: $N processes as 2 nodes, ${HOSTS_PASSES:-2} passes"
	for pass in $(seq 1 "${HOSTS_PASSES:-2}"); do
		for c in all_reduce all_gather; do
			for v in $(rotate "$pass" nthosts gcclhosts); do
				run1 hosts "$pass" "$v" "$c" 90 -b 8 -e 64M -f 8 -n 20 -w 5 -c 0
			done
		done
	done
	for v in nthosts gcclhosts; do
		NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,INIT,ENV,NET NCCL_DEBUG_FILE="$W/logs/hosts_all_reduce_${v}.%p.log" \
			run1 logs 1 "$v" all_reduce 60 -b 8 -e 64K -f 64 -n 2 -w 1 -c 0
	done
	[ -f "$PLUGIN" ] && NCCL_TUNER_PLUGIN=$PLUGIN NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,INIT NCCL_DEBUG_FILE="$W/logs/hosts_all_reduce_plugin.%p.log" \
		run1 logs 1 gcclhostsplugin all_reduce 60 -b 8 -e 64K -f 64 -n 2 -w 1 -c 0
fi

if has logs; then
	log "logs: NCCL_DEBUG=INFO TUNING,INIT,ENV"
	for c in $COLLS; do
		for v in nt gccl plugin; do
			NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,INIT,ENV NCCL_DEBUG_FILE="$W/logs/${c}_${v}.%p.log" \
				run1 logs 1 "$v" "$c" 60 -g "$N" $SMALL -n 2 -w 1 -c 0
		done
	done
fi
if has small; then
	log "small: -g $N $SMALL -n 200 -w 20, ${PASSES:-3} passes"
	for pass in $(seq 1 "${PASSES:-3}"); do
		for c in $COLLS; do
			for v in $(rotate "$pass" $(variants_small $c)); do
				run1 small "$pass" "$v" "$c" 60 -g "$N" $SMALL -n 200 -w 20 -c 0
			done
		done
	done
fi
if has cputime; then
	log "cputime: -C 1, ${CPU_PASSES:-2} passes"
	for pass in $(seq 1 "${CPU_PASSES:-2}"); do
		for c in all_reduce all_gather sendrecv; do
			for v in $(rotate "$pass" nt gccl); do
				run1 cputime "$pass" "$v" "$c" 60 -g "$N" $SMALL -n 200 -w 20 -c 0 -C 1
			done
		done
	done
fi
if has large; then
	log "large: -g $N -b 32M -e 1G -f 2 -n 20 -w 5, ${LARGE_PASSES:-2} passes"
	for pass in $(seq 1 "${LARGE_PASSES:-2}"); do
		for c in $COLLS; do
			for v in $(rotate "$pass" nt gccl plugin); do
				run1 large "$pass" "$v" "$c" 120 -g "$N" -b 32M -e 1G -f 2 -n 20 -w 5 -c 0
			done
		done
	done
fi
if has graph; then
	log "graph: -G 1 -n 100 -w 10, ${GRAPH_PASSES:-2} passes"
	for pass in $(seq 1 "${GRAPH_PASSES:-2}"); do
		for c in all_reduce all_gather sendrecv; do
			for v in $(rotate "$pass" nt gccl cudamalloc); do
				run1 graph "$pass" "$v" "$c" 90 -g "$N" $SMALL -n 100 -w 10 -c 0 -G 1
			done
		done
	done
fi
if has g1; then
	log "g1: -g 1, ${G1_PASSES:-3} passes"
	for pass in $(seq 1 "${G1_PASSES:-3}"); do
		for c in all_reduce sendrecv; do
			for v in $(rotate "$pass" nt gccl ${G1_VARIANTS:-}); do
				run1 g1 "$pass" "$v" "$c" 60 -g 1 $SMALL -n "${G1_ITERS:-200}" -w 20 -c 0
			done
		done
	done
fi
if has rusage; then
	# What one -g 1 call costs the host beyond the GPU's time: the same run at
	# two iteration counts, each under scripts/hostcost/rusage.py (wall, user
	# and system CPU, context switches, threads); the difference over the
	# difference of iterations is per call, start-up and NCCL's set-up cancel.
	log "rusage: ${RU_PASSES:-3} passes"
	for pass in $(seq 1 "${RU_PASSES:-3}"); do
		for v in $(rotate "$pass" nt gccl ${RU_VARIANTS:-}); do
			for n in "${RU_SHORT:-2000}" "${RU_LONG:-100000}"; do
				line="$(cmd "$v" all_reduce -g 1 -b 8 -e 8 -n "$n" -w 100 -c 0)"
				{
					echo "### $line"
					timeout -s KILL 90 python3 "$HERE/hostcost/rusage.py" $line
				} >"$W/raw/rusage_${v}_n${n}_p$pass.txt" 2>&1
				echo "rusage $v n=$n pass $pass: $(tail -1 "$W/raw/rusage_${v}_n${n}_p$pass.txt")" >>"$W/timing.txt"
			done
		done
	done
fi
if has hostcost; then
	log "hostcost: ${HC_PASSES:-3} passes"
	HC=$W/hostcost
	cc -O2 -o "$HC" "$HERE/hostcost/nccl-hostcost.c" -I/usr/local/cuda/include -I/usr/include -L/tmp/ncclhome/lib \
		-L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lnccl -lcudart >"$W/hostcost-build.log" 2>&1 || log "hostcost build failed: $(tail -3 "$W/hostcost-build.log")"
	for pass in $(seq 1 "${HC_PASSES:-3}"); do
		for v in $(rotate "$pass" tests:memalloc gccl:memalloc tests:cudamalloc gccl:cudamalloc nt gccl); do
			case $v in
			*:*) for b in 8 65536; do
				echo "### $v $b pass $pass" >>"$W/raw/hostcost_p$pass.txt"
				timeout -s KILL 30 "$HC" "${v%%:*}" "${v#*:}" $b "${HC_ITERS:-1000}" 5 >>"$W/raw/hostcost_p$pass.txt" 2>&1
			done ;;
			*) run1 hostcost "$pass" "$v" all_reduce 60 -g 1 -b 8 -e 64K -f 8192 -n "${HC_ITERS:-1000}" -w 200 -c 0 -C 1 ;;
			esac
		done
	done
fi

log "done measuring; $SKIPPED runs skipped for time"
python3 "$HERE/gpu-compare-summary.py" "$W" >"$W/summary.txt" 2>&1 || echo "summary failed (rc=$?)" >>"$W/summary.txt"
cp "$HERE/gpu-compare-summary.py" "$W/" 2>/dev/null
TAG=$(echo "$STEPS" | tr ' ' '_')
tar czf "$OUT/compare_${TAG}.tgz" -C "$W" . && log "archive $OUT/compare_${TAG}.tgz ($(du -h "$OUT/compare_${TAG}.tgz" | cut -f1))"
cat "$W/summary.txt"
grep -E "rc=[1-9]|skip" "$W/timing.txt" | head -20
rm -rf "$W"
