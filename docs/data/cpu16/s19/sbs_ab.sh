#!/usr/bin/env bash
# Session 19 on the device (16-core Xeon): BenchmarkFloorSideBySide with
# each rank's buffers on their own cache lines, base (63c004d, built with
# this session's small_bench_test.go) against new, 5 alternating passes.
set -u
for p in 1 2 3 4 5; do
	for b in base new; do
		echo "== sbs $b pass $p"
		.gpu/ccl_$b.test -test.run '^$' -test.bench FloorSideBySide -test.benchtime 40x | grep ^Bench
	done
done
