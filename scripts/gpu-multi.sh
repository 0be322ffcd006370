#!/usr/bin/env bash
# gpu-multi.sh: the NCCL backend and the tuner on every GPU of this machine,
# side by side with nccl-tests on the same libnccl (issue 21).
#
#   BIN=dir NCCL_TESTS_TGZ=tgz TUNER_SRC=dir OUT=dir bash scripts/gpu-multi.sh [steps]
#
# steps (default: all but heldout): perf graph launch sweep plugin heldout
#   perf    allreduce/sendrecv -g N against nccl-tests, PASSES (3) alternating
#           passes over PERF_SIZES (-b 8 -e 1G -f 4), then (PERF_CHECK=1)
#           every binary checked
#   graph   allreduce/sendrecv -G 1 (CUDA graphs) 8 B-64 KiB against nccl-tests,
#           GRAPH_PASSES (2)
#   launch  one process per GPU: --np N and mpirun, against -g N
#   sweep   tune sweep --backend nccl, every algorithm x protocol + NCCL's own
#           choice, 8 B-1 GiB by 4, two repeats; tune table and its NCCL CSV
#   plugin  the table (PLUGIN_CSV, else the sweep's) through gccl's tuner
#           plugin (tune plugin) against NCCL's default, allreduce and
#           allgather, NCCL's TUNING log in the records
#   heldout sizes HELDOUT_B (16) x 4^k to 1 GiB, HELDOUT_REPEAT (1) runs, for
#           tune validate (SWEEP_REPEAT: the sweep's runs, 2)
# BIN holds a CGO_ENABLED=0 build of cmd/tune (tune _perf runs every perf
# binary). NVLink multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0
BIN=${BIN:?}; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
STEPS=${*:-perf graph launch sweep plugin}
PASSES=${PASSES:-3}
has() { [[ " $STEPS " == *" $1 "* ]]; }
log() { echo "=== $* ($(date +%T))"; }
perfbin() { $BIN/tune _perf "$@"; }
N=$(nvidia-smi -L | wc -l)
export GCCL_NCCL_LIBRARY=${GCCL_NCCL_LIBRARY:-$(readlink -f /usr/lib/x86_64-linux-gnu/libnccl.so.2)}
export GCCL_CUDART_LIBRARY=${GCCL_CUDART_LIBRARY:-$(readlink -f "$(ls /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.[0-9]* | head -1)")}
log "$N GPUs; NCCL $GCCL_NCCL_LIBRARY"
nvidia-smi topo -m 2>/dev/null | head -6
NT=/tmp/nccl-tests
if (has perf || has graph) && [ ! -x $NT/build/sendrecv_perf ]; then
	log build nccl-tests
	rm -rf $NT && mkdir -p $NT /tmp/ncclhome/lib && tar xzf "${NCCL_TESTS_TGZ:?}" -C $NT --strip-components=1
	ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so; ln -sf "$GCCL_NCCL_LIBRARY" /tmp/ncclhome/lib/libnccl.so.2
	ln -sfn /usr/include /tmp/ncclhome/include
	(cd $NT && make -j32 MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/tmp/ncclhome BIN_FILES_LIST="all_reduce sendrecv" \
		NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$OUT/build.log" 2>&1) || tail -20 "$OUT/build.log"
fi
export LD_LIBRARY_PATH=/tmp/ncclhome/lib:${LD_LIBRARY_PATH:-}
if has perf; then
	log perf
	{
		for rep in $(seq 1 $PASSES); do
			for t in all_reduce_perf sendrecv_perf; do
				# Alternate who goes first from pass to pass.
				for who in $( ((rep % 2)) && echo "nccl-tests gccl" || echo "gccl nccl-tests"); do
					echo "### $who $t rep $rep"
					if [ $who = gccl ]; then perfbin $t --backend nccl -g $N ${PERF_SIZES:--b 8 -e 1G -f 4} -n 50 -w 10 -c 0
					else $NT/build/$t -g $N ${PERF_SIZES:--b 8 -e 1G -f 4} -n 50 -w 10 -c 0; fi
				done
			done
		done
		if [ "${PERF_CHECK:-1}" != 0 ]; then
			echo "### every binary -g $N, checked"
			for p in all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf gather_perf scatter_perf hypercube_perf alltoallv_perf sendrecv_perf; do
				perfbin $p --backend nccl -g $N -b 8 -e 8M -f 32 -n 5 -w 2 -c 1 | grep -E "Out of bounds|Avg bus"; echo "$p rc=$?"
			done
		fi
	} >"$OUT/perf.txt" 2>&1
	grep "rc=" "$OUT/perf.txt"
fi
if has graph; then
	log graph
	{
		for rep in $(seq 1 ${GRAPH_PASSES:-2}); do
			for t in all_reduce_perf sendrecv_perf; do
				echo "### nccl-tests $t -G 1 rep $rep"; timeout -s KILL 60 $NT/build/$t -g $N -b 8 -e 64K -f 4 -n 100 -w 10 -G 1; echo "rc=$?"
				echo "### gccl $t -G 1 rep $rep"; timeout -s KILL 60 $BIN/tune _perf $t --backend nccl -g $N -b 8 -e 64K -f 4 -n 100 -w 10 -G 1; echo "rc=$?"
			done
		done
	} >"$OUT/graph.txt" 2>&1
	grep "rc=" "$OUT/graph.txt" | sort | uniq -c
fi
if has launch; then
	log launch
	{
		echo "### -g $N"; timeout 60 $BIN/tune _perf all_reduce_perf --backend nccl -g $N -b 8 -e 1G -f 16 -n 50 -w 10 -c 0
		echo "### --np $N"; timeout 60 $BIN/tune _perf all_reduce_perf --backend nccl --np $N -b 8 -e 1G -f 16 -n 50 -w 10 -c 0; echo "rc=$?"
		echo "### --np $N checked"; timeout 60 $BIN/tune _perf all_reduce_perf --backend nccl --np $N -b 8 -e 4M -f 16 -n 5 -w 2 -c 1 | grep -E "Out of bounds"; echo "rc=$?"
		if command -v mpirun >/dev/null; then
			echo "### mpirun -np $N"
			timeout 90 mpirun --allow-run-as-root -np $N -x NCCL_NVLS_ENABLE -x GCCL_NCCL_LIBRARY -x GCCL_CUDART_LIBRARY \
				$BIN/tune _perf all_reduce_perf --backend nccl -b 8 -e 1G -f 16 -n 50 -w 10 -c 0; echo "rc=$?"
		fi
	} >"$OUT/launch.txt" 2>&1
	grep -E "rc=|Using|Rank" "$OUT/launch.txt" | head -20
fi
if has sweep; then
	log sweep
	timeout 200 $BIN/tune sweep --backend nccl --ranks $N --colls allreduce,allgather --proto all --algo all --nchannels auto \
		-b 8 -e 1G -f 4 --precision 3% --max-time 200ms --repeat ${SWEEP_REPEAT:-2} --output "$OUT/train.jsonl" --force >"$OUT/sweep.log" 2>&1
	echo "sweep rc=$?"; tail -2 "$OUT/sweep.log"
	$BIN/tune table "$OUT/train.jsonl" --output /tmp/table.json --nccl-csv "$OUT/nccl.csv" --force >"$OUT/table.txt" 2>&1
	echo "table rc=$?"; tail -25 "$OUT/table.txt"; cp /tmp/table.json "$OUT/table.json"
fi
if has plugin; then
	# Timed without NCCL's debug log (it costs host time per call): NCCL's
	# default, the plugin with no rules (what loading a tuner costs), the
	# plugin with the table; alternating. Then one logged run with the table:
	# what NCCL ran, in the records' chosen_* fields.
	log plugin
	CSV=${PLUGIN_CSV:-$OUT/nccl.csv}
	$BIN/tune plugin --output /tmp/libnccl-tuner-gccl.so || echo "plugin build failed"
	printf '# no rules: the plugin loaded, NCCL choosing\n' >/tmp/empty.csv
	PB="${PLUGIN_SIZES:--b 8 -e 512M -f 4} ${PLUGIN_EXTRA:-}"
	{
		for rep in $(seq 1 ${PLUGIN_PASSES:-3}); do
			for t in all_reduce_perf all_gather_perf; do
				# Each pass starts with a different one: a slow spell
				# (a cold host at a pass's start) does not always hit one.
				case $((rep % 3)) in 1) order="default empty table" ;; 2) order="empty table default" ;; 0) order="table default empty" ;; esac
				for how in $order; do
					echo "### $how $t rep $rep"
					case $how in
					default) timeout 60 $BIN/tune _perf $t --backend nccl -g $N $PB -n 40 -w 10 --out "$OUT/plugin_${t%%_perf}_${how}_$rep.jsonl" --force ;;
					empty) NCCL_TUNER_PLUGIN=/tmp/libnccl-tuner-gccl.so timeout 60 $BIN/tune _perf $t --backend nccl -g $N $PB -n 40 -w 10 \
						--tuning-file /tmp/empty.csv --out "$OUT/plugin_${t%%_perf}_${how}_$rep.jsonl" --force ;;
					table) NCCL_TUNER_PLUGIN=/tmp/libnccl-tuner-gccl.so timeout 60 $BIN/tune _perf $t --backend nccl -g $N $PB -n 40 -w 10 \
						--tuning-file "$CSV" --out "$OUT/plugin_${t%%_perf}_${how}_$rep.jsonl" --force ;;
					esac
				done
			done
		done
		for t in all_reduce_perf all_gather_perf; do
			echo "### logged table $t"
			NCCL_TUNER_PLUGIN=/tmp/libnccl-tuner-gccl.so NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,INIT NCCL_DEBUG_FILE=$OUT/nccl_debug_${t%%_perf}.%p.log \
				timeout 60 $BIN/tune _perf $t --backend nccl -g $N $PB -n 5 -w 2 --tuning-file "$CSV" --out "$OUT/plugin_${t%%_perf}_logged.jsonl" --force
		done
	} >"$OUT/plugin.txt" 2>&1
	grep -hE "TUNER/gccl: [0-9]+ rules" "$OUT"/nccl_debug_*.log | head -2; grep -hc "TUNER/gccl: rule" "$OUT"/nccl_debug_*.log
fi
if has heldout; then
	log heldout
	timeout 120 $BIN/tune sweep --backend nccl --ranks $N --colls allreduce,allgather --proto all --algo all --nchannels auto \
		-b ${HELDOUT_B:-16} -e 1G -f 4 --precision 3% --max-time 200ms --repeat ${HELDOUT_REPEAT:-1} --output "$OUT/heldout.jsonl" --force >"$OUT/heldout.log" 2>&1
	echo "heldout rc=$?"; tail -2 "$OUT/heldout.log"
fi
# Everything in one archive: the device tool brings back few files.
(cd "$OUT" && ls *.jsonl *.log 2>/dev/null | grep -v build.log | tar czf "records_${STEPS// /_}.tgz" -T - && rm -f *.jsonl nccl_debug_*.log) 2>/dev/null
log done
