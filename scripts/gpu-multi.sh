#!/usr/bin/env bash
# gpu-multi.sh: the NCCL backend and the tuner on every GPU of this machine,
# side by side with nccl-tests on the same libnccl (issue 21).
#
#   BIN=dir NCCL_TESTS_TGZ=tgz TUNER_SRC=dir OUT=dir bash scripts/gpu-multi.sh [steps]
#
# steps (default: all but heldout): perf launch sweep plugin heldout
#   perf    allreduce/sendrecv -g N against nccl-tests, with and without -G 1
#   launch  one process per GPU: --np N and mpirun, against -g N
#   sweep   tune sweep --backend nccl, every algorithm x protocol + NCCL's own
#           choice, 8 B-1 GiB by 4, two repeats; tune table and its NCCL CSV
#   plugin  the table through NCCL's example tuner plugin (built here from
#           TUNER_SRC) against the default, NCCL's TUNING log in the records
#   heldout the midpoint sizes (16 B-1 GiB by 4), for tune validate
# BIN holds CGO_ENABLED=0 builds of cmd/tune, cmd/allreduce_perf and
# cmd/sendrecv_perf. NVLink multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0
BIN=${BIN:?}; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
STEPS=${*:-perf launch sweep plugin}
has() { [[ " $STEPS " == *" $1 "* ]]; }
log() { echo "=== $* ($(date +%T))"; }
N=$(nvidia-smi -L | wc -l)
export GCCL_NCCL_LIBRARY=${GCCL_NCCL_LIBRARY:-$(readlink -f /usr/lib/x86_64-linux-gnu/libnccl.so.2)}
export GCCL_CUDART_LIBRARY=${GCCL_CUDART_LIBRARY:-$(readlink -f "$(ls /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.[0-9]* | head -1)")}
log "$N GPUs; NCCL $GCCL_NCCL_LIBRARY"
nvidia-smi topo -m 2>/dev/null | head -6
NT=/tmp/nccl-tests
if has perf; then
	log build nccl-tests
	rm -rf $NT && mkdir -p $NT /tmp/ncclhome/lib && tar xzf "${NCCL_TESTS_TGZ:?}" -C $NT --strip-components=1
	ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so; ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so.2
	ln -sfn /usr/include /tmp/ncclhome/include
	(cd $NT && make -j16 MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/tmp/ncclhome \
		NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$OUT/build.log" 2>&1) || tail -20 "$OUT/build.log"
	export LD_LIBRARY_PATH=/tmp/ncclhome/lib:${LD_LIBRARY_PATH:-}
	log perf
	{
		for rep in 1 2; do
			for t in all_reduce_perf sendrecv_perf; do
				echo "### nccl-tests $t rep $rep"; $NT/build/$t -g $N -b 8 -e 1G -f 4 -n 50 -w 10 -c 0
				echo "### gccl $t rep $rep"; $BIN/tune _perf $t --backend nccl -g $N -b 8 -e 1G -f 4 -n 50 -w 10 -c 0
			done
			echo "### nccl-tests all_reduce_perf -G 1 rep $rep"; timeout 60 $NT/build/all_reduce_perf -g $N -b 8 -e 64K -f 4 -n 1000 -w 100 -G 1
			echo "### gccl all_reduce_perf -G 1 rep $rep"; $BIN/all_reduce_perf --backend nccl -g $N -b 8 -e 64K -f 4 -n 1000 -w 100 -G 1
		done
		echo "### every binary -g $N, checked"
		for p in all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf gather_perf scatter_perf hypercube_perf alltoallv_perf; do
			$BIN/tune _perf $p --backend nccl -g $N -b 8 -e 8M -f 32 -n 5 -w 2 -c 1 | grep -E "Out of bounds|Avg bus"; echo "$p rc=$?"
		done
		$BIN/all_reduce_perf --backend nccl -g $N -b 1K -e 1M -f 32 -n 3 -w 1 -d all -o all | grep -E "Out of bounds"; echo "all types and ops rc=$?"
		$BIN/all_reduce_perf --backend nccl -g $N -b 8 -e 1M -f 16 -G 2 -I 0 -R 1 | grep -E "Out of bounds"; echo "-G 2 -R 1 rc=$?"
		$BIN/all_reduce_perf --backend nccl -g $N -b 8 -e 1M -f 16 -I 1 --check-timed | grep -E "Out of bounds|Per-Iter"; echo "-I 1 --check-timed rc=$?"
	} >"$OUT/perf.txt" 2>&1
	grep "rc=" "$OUT/perf.txt"
fi
if has launch; then
	log launch
	{
		echo "### -g $N"; timeout 60 $BIN/all_reduce_perf --backend nccl -g $N -b 8 -e 1G -f 16 -n 50 -w 10 -c 0
		echo "### --np $N"; timeout 60 $BIN/all_reduce_perf --backend nccl --np $N -b 8 -e 1G -f 16 -n 50 -w 10 -c 0; echo "rc=$?"
		echo "### --np $N checked"; timeout 60 $BIN/all_reduce_perf --backend nccl --np $N -b 8 -e 4M -f 16 -n 5 -w 2 -c 1 | grep -E "Out of bounds"; echo "rc=$?"
		if command -v mpirun >/dev/null; then
			echo "### mpirun -np $N"
			timeout 90 mpirun --allow-run-as-root -np $N -x NCCL_NVLS_ENABLE -x GCCL_NCCL_LIBRARY -x GCCL_CUDART_LIBRARY \
				$BIN/all_reduce_perf --backend nccl -b 8 -e 1G -f 16 -n 50 -w 10 -c 0; echo "rc=$?"
		fi
	} >"$OUT/launch.txt" 2>&1
	grep -E "rc=|Using|Rank" "$OUT/launch.txt" | head -20
fi
if has sweep; then
	log sweep
	timeout 200 $BIN/tune sweep --backend nccl --ranks $N --colls allreduce,allgather --proto all --algo all --nchannels auto \
		-b 8 -e 1G -f 4 --precision 3% --max-time 200ms --repeat 2 --output "$OUT/train.jsonl" --force >"$OUT/sweep.log" 2>&1
	echo "sweep rc=$?"; tail -2 "$OUT/sweep.log"
	$BIN/tune table "$OUT/train.jsonl" --output /tmp/table.json --nccl-csv "$OUT/nccl.csv" --force >"$OUT/table.txt" 2>&1
	echo "table rc=$?"; tail -25 "$OUT/table.txt"; cp /tmp/table.json "$OUT/table.json"
fi
if has plugin && [ -n "${TUNER_SRC:-}" ] && [ -s "$OUT/nccl.csv" ]; then
	log plugin
	gcc -I"$TUNER_SRC/nccl" -fPIC -shared -o /tmp/libnccl-tuner-example.so "$TUNER_SRC/plugin.c" || echo "plugin build failed"
	{
		for rep in 1 2; do
			echo "### default rep $rep"
			NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING timeout 40 $BIN/all_reduce_perf --backend nccl -g $N -b 8 -e 1G -f 4 -n 50 -w 10 \
				--out "$OUT/plugin_default_$rep.jsonl" --force
			echo "### table rep $rep"
			NCCL_TUNER_PLUGIN=/tmp/libnccl-tuner-example.so NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,INIT \
				timeout 40 $BIN/all_reduce_perf --backend nccl -g $N -b 8 -e 1G -f 4 -n 50 -w 10 --tuning-file "$OUT/nccl.csv" \
				--out "$OUT/plugin_table_$rep.jsonl" --force
		done
	} >"$OUT/plugin.txt" 2>&1
	grep -ciE "tuner" "$OUT/plugin.txt"
fi
if has heldout; then
	log heldout
	timeout 120 $BIN/tune sweep --backend nccl --ranks $N --colls allreduce,allgather --proto all --algo all --nchannels auto \
		-b 16 -e 1G -f 4 --precision 3% --max-time 200ms --output "$OUT/heldout.jsonl" --force >"$OUT/heldout.log" 2>&1
	echo "heldout rc=$?"; tail -2 "$OUT/heldout.log"
fi
log done
