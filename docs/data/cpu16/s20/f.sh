#!/bin/bash
# session 20, call 6: GOMAXPROCS above the CPUs (usableProcs), new build
cd "$(dirname "$0")/.."
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $6} END {print ""}'; }
for pass in 1 2; do
  for p in 16 32; do
    echo "p$pass n=8 Ring/Simple/4 GOMAXPROCS=$p $(GOMAXPROCS=$p ./allreduce_perf -t 8 -b 2K -e 512K -f 16 -n 20 -w 3 -c 0 --out-of-place-only --configs Ring/Simple/4 2>&1 | col)"
    echo "p$pass n=16 auto GOMAXPROCS=$p $(GOMAXPROCS=$p ./allreduce_perf -t 16 -b 8 -e 512K -f 8 -n 200 -w 20 -c 0 --out-of-place-only 2>&1 | col)"
    echo "p$pass n=8 auto GOMAXPROCS=$p $(GOMAXPROCS=$p ./allreduce_perf -t 8 -b 8 -e 512K -f 8 -n 200 -w 20 -c 0 --out-of-place-only 2>&1 | col)"
  done
done
