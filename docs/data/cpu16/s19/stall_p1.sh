#!/usr/bin/env bash
# Session 19 on the device (16-core Xeon): the worst call of 10,000 (max_us)
# for 2 ranks' allreduce and for the spin round trip, 3 passes; then a
# prefetch of the peers' posts at enqueue (p1, not kept) against new,
# BenchmarkFloorSideBySide, 5 alternating passes.
set -u
for p in 1 2 3; do
	echo "== stall pass $p"
	.gpu/ccl_new.test -test.run '^$' -test.bench 'SmallAllReduce/ranks=2/algo=auto|SpinRoundTrip' -test.benchtime 100000x | grep ^Bench
done
for p in 1 2 3 4 5; do
	for b in new p1; do
		echo "== sbs $b pass $p"
		.gpu/ccl_$b.test -test.run '^$' -test.bench FloorSideBySide -test.benchtime 40x | grep ^Bench
	done
done
