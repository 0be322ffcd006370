#!/usr/bin/env bash
# nccl-profile.sh: allreduces traced through gccl's NCCL profiler plugin on
# this machine's GPUs (issue 45), archived in one tgz.
#
#   BIN=dir OUT=dir [NCCL_TESTS_TGZ=tgz] bash scripts/nccl-profile.sh [steps]
#
# steps (default: build nvlink net tests overhead):
#   build     tune profiler --output: the plugin, built here with cc
#   nvlink    allreduce_perf --backend nccl -g N, 1 MiB, through the plugin
#             (NCCL's own transports: kernel channels, no proxy on NVLink)
#   net       the same with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: NCCL's
#             network transport between the GPUs, so proxy operations and
#             their steps show
#   tests     nccl-tests' all_reduce_perf through the plugin (NCCL_TESTS_TGZ)
#   overhead  allreduce_perf at 8 B and 1 MiB with and without the plugin,
#             PASSES (3) alternating passes
# Each traced run's per-rank files are merged and checked against the
# format's rules (tune profiler --merge), summarised by tune trace where
# this build has it, and everything goes in $OUT/nccl-traces.tgz.
# BIN holds a CGO_ENABLED=0 build of cmd/tune (tune _perf runs the perf
# binaries). NVLink multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0
BIN=${BIN:?BIN: folder of the gccl binaries}
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
STEPS=${*:-build nvlink net tests overhead}
PASSES=${PASSES:-3}
has() { [[ " $STEPS " == *" $1 "* ]]; }
log() { echo "=== $* ($(date +%T))"; }
T=/tmp/nccl-traces; mkdir -p $T
SO=$T/libnccl-profiler-gccl.so

# One libnccl for every run; libcudart next to CUDA.
for d in /usr/lib/x86_64-linux-gnu /usr/local/cuda/lib64 /usr/local/lib/python3*/dist-packages/nvidia/nccl/lib \
	/opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib; do
	[ -e "$d/libnccl.so.2" ] && [ -z "${GCCL_NCCL_LIBRARY:-}" ] && export GCCL_NCCL_LIBRARY=$(readlink -f "$d/libnccl.so.2")
done
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
	f=$(ls "$d"/libcudart.so.[0-9]* 2>/dev/null | head -1)
	[ -n "$f" ] && [ -z "${GCCL_CUDART_LIBRARY:-}" ] && export GCCL_CUDART_LIBRARY=$(readlink -f "$f")
done
N=$(nvidia-smi -L | wc -l)
log "$N GPUs; NCCL ${GCCL_NCCL_LIBRARY:-not found}"

# traced NAME CMD...: runs CMD with the plugin, writing NAME's per-rank
# files into $T/NAME/, then merges and checks them into $T/NAME.json.
traced() {
	local name=$1; shift
	rm -rf "$T/$name"; mkdir -p "$T/$name"
	echo "### $name: $*"
	NCCL_PROFILER_PLUGIN=$SO GCCL_PROFILER_OUTPUT="$T/$name/r%r-%h-%p-c%n.json" \
		NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_DEBUG_FILE="$T/$name/nccl.%h.%p.log" \
		timeout -s KILL 120 "$@" >"$T/$name/run.txt" 2>&1
	echo "rc=$?"
	grep -hE "PROFILER/Plugin|profiler plugin|NCCL version" "$T/$name"/nccl.*.log 2>/dev/null | sort | uniq -c | head -5
	grep -E "gccl profiler|Avg bus" "$T/$name/run.txt"
	ls "$T/$name"/r*.json >/dev/null 2>&1 || { echo "no trace files"; return; }
	$BIN/tune profiler --merge "$T/$name.json" "$T/$name"/r*.json; echo "merge rc=$?"
	if $BIN/tune trace --help >/dev/null 2>&1; then
		$BIN/tune trace "$T/$name.json" 2>&1 | head -60
	fi
}

if has build; then
	log build
	$BIN/tune profiler --output $SO || echo "plugin build failed"
	$BIN/tune profiler --source >$T/gccl_profiler.c
	nm -D $SO | grep ncclProfiler
fi
if has nvlink; then
	log nvlink
	traced nvlink $BIN/tune _perf all_reduce_perf --backend nccl -g $N -b 1M -e 1M -n 5 -w 2 -c 0
fi
if has net; then
	log net
	NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 traced net $BIN/tune _perf all_reduce_perf --backend nccl -g $N -b 1M -e 1M -n 5 -w 2 -c 0
	NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 traced net-np $BIN/tune _perf all_reduce_perf --backend nccl --np $N -b 1M -e 1M -n 5 -w 2 -c 0
fi
if has tests; then
	NT=/tmp/nccl-tests
	if [ -n "${NCCL_TESTS_TGZ:-}" ] && [ ! -x $NT/build/all_reduce_perf ]; then
		log build nccl-tests
		rm -rf $NT && mkdir -p $NT /tmp/ncclhome/lib && tar xzf "$NCCL_TESTS_TGZ" -C $NT --strip-components=1
		ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so; ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so.2
		ln -sfn /usr/include /tmp/ncclhome/include
		(cd $NT && make -j32 MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/tmp/ncclhome BIN_FILES_LIST="all_reduce" \
			NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$OUT/nccl-tests-build.log" 2>&1) || tail -20 "$OUT/nccl-tests-build.log"
	fi
	if [ -x $NT/build/all_reduce_perf ]; then
		log tests
		LD_LIBRARY_PATH=/tmp/ncclhome/lib:${LD_LIBRARY_PATH:-} traced tests $NT/build/all_reduce_perf -g $N -b 1M -e 1M -n 5 -w 2 -c 0
	else
		echo "tests: no nccl-tests (NCCL_TESTS_TGZ)"
	fi
fi
if has overhead; then
	# The time column of one size, with the plugin (all events) and
	# without; alternating which goes first. The traces go to /tmp.
	log overhead
	{
		for rep in $(seq 1 $PASSES); do
			for how in $( ((rep % 2)) && echo "off on" || echo "on off"); do
				for b in 8 1M; do
					echo "### $how $b rep $rep"
					if [ $how = on ]; then
						rm -rf /tmp/nccl-ovh && mkdir -p /tmp/nccl-ovh
						NCCL_PROFILER_PLUGIN=$SO GCCL_PROFILER_OUTPUT="/tmp/nccl-ovh/r%r-c%n.json" \
							$BIN/tune _perf all_reduce_perf --backend nccl -g $N -b $b -e $b -n 1000 -w 50 -c 0
					else
						$BIN/tune _perf all_reduce_perf --backend nccl -g $N -b $b -e $b -n 1000 -w 50 -c 0
					fi
				done
			done
		done
	} >"$OUT/nccl-profile-overhead.txt" 2>&1
	# "### on|off SIZE rep K" beside its row (size count type redop root time algbw busbw ...).
	grep -E "^###|^ +[0-9]+ +[0-9]+ " "$OUT/nccl-profile-overhead.txt" | paste - - | sort -k2,3 | head -20
	grep "gccl profiler" "$OUT/nccl-profile-overhead.txt" | sort | uniq -c | head
fi
tar czf "$OUT/nccl-traces.tgz" -C /tmp nccl-traces && ls -la "$OUT/nccl-traces.tgz"
