#!/bin/bash
# session 24, call 4: the floor beside the bare exchange (BenchmarkFloorSideBySide: spin round trip,
# the library's 2-rank allreduce, and the same one-shot with no library), 5 passes; the CPU's flags.
cd "$(dirname "$0")"
gunzip -f floor.test.gz; chmod +x floor.test
grep -m1 "model name" /proc/cpuinfo; grep -m1 -o -w "cldemote\|movdir64b\|avx512f" /proc/cpuinfo | sort -u | tr '\n' ' '; echo
for p in 1 2 3 4 5; do ./floor.test -test.run '^$' -test.bench FloorSideBySide -test.benchtime 40x 2>&1 | grep Benchmark; done
