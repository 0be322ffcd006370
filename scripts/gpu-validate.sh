#!/usr/bin/env bash
# gpu-validate.sh: the NCCL backend on this machine's GPU(s), side by side
# with nccl-tests built against the same libnccl.
#
#   BIN=dir-with-tune-and-all_reduce_perf NCCL_TESTS_TGZ=nccl-tests-2.19.6.tar.gz \
#     OUT=out-dir bash scripts/gpu-validate.sh [steps]
#
# steps (default: all): find build correct knobs overhead bandwidth sweep
# knobs needs TUNER_SRC: a folder with NCCL's plugins/tuner/example
# (plugin.c, nccl/*.h) of the same NCCL release, for --tuning-file.
# BIN holds CGO_ENABLED=0 builds of cmd/tune and cmd/allreduce_perf.
# Writes a few text files into OUT. NVLink multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0
BIN=${BIN:?BIN: folder of the gccl binaries}
OUT=${OUT:-gpu-out}
STEPS=${*:-find build correct knobs overhead bandwidth sweep}
REPS=${REPS:-3}
mkdir -p "$OUT"
has() { [[ " $STEPS " == *" $1 "* ]]; }
log() { echo "=== $* ($(date +%T))"; }

# --- find: one libnccl for both sides; libcudart next to CUDA.
for d in /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib \
	/opt/torch/.venv/lib/python3*/site-packages/nvidia/cu13/lib /usr/local/lib/python3*/dist-packages/nvidia/nccl/lib; do
	[ -e "$d/libnccl.so.2" ] && [ -z "${GCCL_NCCL_LIBRARY:-}" ] && export GCCL_NCCL_LIBRARY=$(readlink -f "$d/libnccl.so.2")
done
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
	f=$(ls "$d"/libcudart.so.[0-9]* 2>/dev/null | head -1)
	[ -n "$f" ] && [ -z "${GCCL_CUDART_LIBRARY:-}" ] && export GCCL_CUDART_LIBRARY=$(readlink -f "$f")
done
NCCL_LIB_DIR=$(dirname "${GCCL_NCCL_LIBRARY:-/nonexistent/x}")
NCCL_HOME=$(dirname "$NCCL_LIB_DIR")
if has find; then
	log find
	nvidia-smi -L
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
	echo "GCCL_NCCL_LIBRARY=${GCCL_NCCL_LIBRARY:-unset} GCCL_CUDART_LIBRARY=${GCCL_CUDART_LIBRARY:-unset} NCCL_HOME=$NCCL_HOME"
	find / -xdev \( -name 'libnccl.so*' -o -name 'nccl.h' -o -name 'libnccl-tuner*.so' \) 2>/dev/null | grep -v '^/proc' | head -20
fi

# --- build nccl-tests against that NCCL (headers beside it).
NT=/tmp/nccl-tests
if has build; then
	log build nccl-tests
	rm -rf $NT && mkdir -p $NT && tar xzf "${NCCL_TESTS_TGZ:?}" -C $NT --strip-components=1
	inc=$NCCL_HOME/include
	[ -e "$inc/nccl.h" ] || inc=$(dirname "$(find / -xdev -name nccl.h 2>/dev/null | head -1)")
	# nccl-tests links -lnccl from NCCL_HOME/lib: give it the same library.
	mkdir -p /tmp/ncclhome/lib && ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so && ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so.2
	ln -sfn "$inc" /tmp/ncclhome/include
	(cd $NT && make -j16 MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/tmp/ncclhome \
		NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$OUT/build.log" 2>&1) || { tail -30 "$OUT/build.log"; }
	ls $NT/build/*_perf 2>/dev/null | head -20
fi
export LD_LIBRARY_PATH=/tmp/ncclhome/lib:${LD_LIBRARY_PATH:-}
G="$BIN/tune _perf"

# --- correct: every binary, -g 1, checked; all types and ops; graphs; registration.
if has correct; then
	log correct
	{
		for p in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf \
			gather_perf scatter_perf sendrecv_perf hypercube_perf alltoallv_perf; do
			echo "### $p"
			$G $p --backend nccl -g 1 -b 8 -e 8M -f 32 -n 5 -w 2 -c 1; echo "rc=$?"
		done
		echo "### all types and ops"
		$G all_reduce_perf --backend nccl -b 1K -e 1M -f 32 -n 3 -w 1 -d all -o all; echo "rc=$?"
		$G reduce_scatter_perf --backend nccl -b 1K -e 1M -f 32 -n 3 -w 1 -d all -o all; echo "rc=$?"
		echo "### -G 1, -R 1, -R 2, -I 1, -y 1, -m 4, --check-timed, -K 2"
		$G all_reduce_perf --backend nccl -b 8 -e 1M -f 16 -G 1 -c 1; echo "rc=$?"
		$G all_reduce_perf --backend nccl -b 8 -e 1M -f 16 -R 1 -c 1; echo "rc=$?"
		$G all_reduce_perf --backend nccl -b 8 -e 1M -f 16 -R 2 -c 1; echo "rc=$?"
		$G all_reduce_perf --backend nccl -b 8 -e 1M -f 16 -I 1 -y 1 -m 4 -c 1; echo "rc=$?"
		$G all_reduce_perf --backend nccl -b 8 -e 1M -f 16 --check-timed -K 2 --nchannels 2 --proto LL; echo "rc=$?"
		GCCL_NCCL_INIT=byvalue $G all_reduce_perf --backend nccl -b 8 -e 1M -f 16 -c 1; echo "rc=$? (byvalue init)"
		echo "### --np 1 job path and errors"
		$G all_reduce_perf --backend nccl -g 2 -b 8 -e 8; echo "rc=$? (want 2: one GPU)"
		GCCL_NCCL_LIBRARY=/nonexistent $G all_reduce_perf --backend nccl; echo "rc=$?"
		echo "### TUNING log"
		NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,ENV,INIT NCCL_PROTO=LL $G all_reduce_perf --backend nccl -b 1M -e 1M -n 2 -w 1 2>&1 | grep -i "NCCL INFO" | head -40
	} >"$OUT/correct.txt" 2>&1
	grep -c "rc=0" "$OUT/correct.txt"; grep "rc=[1-9]" "$OUT/correct.txt"
	grep -E "Out of bounds|#wrong|wrong" "$OUT/correct.txt" | head -3
fi

# --- knobs: what NCCL was asked for reaches it (its INFO log says so).
if has knobs; then
	log knobs
	{
		echo "### --nchannels 2 --proto LL: NCCL's channels and NCCL_PROTO"
		NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV $G all_reduce_perf --backend nccl -b 1M -e 1M -n 2 -w 1 --nchannels 2 --proto LL 2>&1 |
			grep -E "NCCL_PROTO|Channel [0-9]+/|nchannels|Init COMPLETE|#wrong|^ +[0-9]" | head -12
		echo "### --nchannels 8 --algo Tree"
		NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV $G all_reduce_perf --backend nccl -b 1M -e 1M -n 2 -w 1 --nchannels 8 --algo Tree 2>&1 |
			grep -E "NCCL_ALGO|Channel [0-9]+/" | tail -3
		echo "### TUNING log into the records"
		NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING $G all_reduce_perf --backend nccl -b 8 -e 1M -f 32 -n 3 -w 1 --out /tmp/tl.jsonl --force
		grep -o '"chosen_[a-z]*":[^,]*' /tmp/tl.jsonl | sort | uniq -c
		echo "### alltoallv in place (staging twin)"
		$G alltoallv_perf --backend nccl -g 1 -b 8 -e 8M -f 32 -n 5 -w 2 -c 1; echo "rc=$?"
		if [ -n "${TUNER_SRC:-}" ]; then
			echo "### --tuning-file through NCCL's example tuner plugin"
			gcc -I"$TUNER_SRC/nccl" -fPIC -shared -o /tmp/libnccl-tuner-example.so "$TUNER_SRC/plugin.c" && echo built plugin
			printf 'allreduce,0,18446744073709551615,ring,ll,2,-1,-1,-1,-1\n' >/tmp/tuner.csv
			NCCL_TUNER_PLUGIN=/tmp/libnccl-tuner-example.so NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV \
				$G all_reduce_perf --backend nccl -b 1M -e 1M -n 2 -w 1 --tuning-file /tmp/tuner.csv 2>&1 |
				grep -iE "tuner|Tuning file|#wrong|^ +[0-9]" | head -20
			$G all_reduce_perf --backend nccl -b 1M -e 1M -n 2 -w 1 --tuning-file /tmp/tuner.csv; echo "rc=$? (no plugin beside libnccl: want 2)"
		fi
	} >"$OUT/knobs.txt" 2>&1
	grep -c . "$OUT/knobs.txt"
fi

# --- overhead: 8 B - 64 KiB, with and without graphs, alternating the two sides.
if has overhead; then
	log overhead
	{
		for rep in $(seq $REPS); do
			for g in 0 100; do
				echo "### nccl-tests -G $g rep $rep"
				$NT/build/all_reduce_perf -g 1 -b 8 -e 64K -f 2 -n 2000 -w 200 -G $g
				echo "### gccl -G $g rep $rep"
				$BIN/all_reduce_perf --backend nccl -g 1 -b 8 -e 64K -f 2 -n 2000 -w 200 -G $g
			done
		done
	} >"$OUT/overhead.txt" 2>&1
fi

# --- bandwidth: 2 MB and up.
if has bandwidth; then
	log bandwidth
	{
		for rep in $(seq $REPS); do
			echo "### nccl-tests rep $rep"
			$NT/build/all_reduce_perf -g 1 -b 2M -e 1G -f 2 -n 200 -w 20 -c 0
			echo "### gccl rep $rep"
			$BIN/all_reduce_perf --backend nccl -g 1 -b 2M -e 1G -f 2 -n 200 -w 20 -c 0
		done
	} >"$OUT/bandwidth.txt" 2>&1
fi

# --- sweep: every protocol and algorithm on this GPU, then a table.
if has sweep; then
	log sweep
	$BIN/tune sweep --backend nccl --colls allreduce,allgather --ranks 1 --proto all --algo all --nchannels 1,4 \
		-b 8 -e 64M -f 4 --precision 3% --max-time 300ms --repeat 2 --output "$OUT/sweep.jsonl" --force >"$OUT/sweep.log" 2>&1
	echo "sweep rc=$?"; tail -5 "$OUT/sweep.log"
fi
log done
