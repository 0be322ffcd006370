#!/bin/bash
# session 23, call 1: the built-in constants (plain posts priced) on the 16-core Xeon: auto and
# the forced configurations side by side, 2-16 ranks in one process, 8 B-256 KiB, two passes
# (A to fit the host's constants on, B held out); then the floor side by side.
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
nproc; lscpu | grep -E "Model name|Socket|NUMA node\(s\)"
CONF=auto,OneShot/LL/1,TwoShot/LL/1,Ring/LL/1,Ring/LL128/1,Ring/LL128/4,Ring/Simple/1,Ring/Simple/4,Tree/LL/1,Tree/LL128/1,Tree/Simple/1,Tree/Simple/4
mkdir -p $OUT/r
for pass in A B; do for n in 2 4 8 16; do
  s=$(date +%s)
  timeout 150 ./ar -t $n -g 1 -b 8 -e 256K -f 2 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 150ms --out $OUT/r/${pass}_small_n$n.jsonl --configs $CONF > $OUT/r/${pass}_small_n$n.txt 2>&1
  echo "pass $pass n $n rc $? $(( $(date +%s) - s )) s"
done; done
for p in 1 2 3; do ./ccl.test -test.run '^$' -test.bench FloorSideBySide -test.benchtime 20x; done > $OUT/r/floor.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r && ls -la
