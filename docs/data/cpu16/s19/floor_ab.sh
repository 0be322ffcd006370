#!/usr/bin/env bash
# Session 19 on the device (16-core Xeon): the floor before (base = 63c004d)
# and after the poster's late barrier (new), side by side.
# .gpu holds CGO_ENABLED=0 builds: allreduce_perf{,_base}, ccl_{base,new}.test
# (base's test binary built with this session's small_bench_test.go), mpi_perf.c.
set -u
OUT=${OUT:?}
lscpu | grep -E "Model name|^CPU\(s\)"
# 1. BenchmarkFloorSideBySide (2 ranks in one process against a spin round
#    trip on the same goroutines), 3 alternating passes.
for p in 1 2 3; do
	for b in base new; do
		echo "== sbs $b pass $p"
		.gpu/ccl_$b.test -test.run '^$' -test.bench FloorSideBySide -test.benchtime 40x | grep ^Bench
	done
done >"$OUT/sbs.txt" 2>&1
# 2. perf -t N, base and new, --np N and Open MPI: 8 B-512 B, 2 passes.
BIN=.gpu RANKS="2 4 8 16" PASSES=2 OUT="$OUT" bash scripts/cpu-scale.sh floor
