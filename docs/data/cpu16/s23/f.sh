#!/bin/bash
# session 23, call 6 (the model with posts and reads copied in turn, the board auto only for one
# round): (1) held-out allreduce round F, two alternating rounds, auto with the built-in constants
# and with the Xeon's own (xeon_s23.json, refitted on call 1's pass A), each beside the forced
# configurations, 2-16 ranks, 8 B-256 KiB; (2) allgather and broadcast, 2 and 8 ranks, the same
# side by side, one round; (3) the mid sizes against Open MPI (scripts/bench-mid.sh, 3 passes).
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
mkdir -p $OUT/r
CONF=auto,OneShot/LL/1,TwoShot/LL/1,Ring/LL/1,Ring/LL128/1,Ring/LL128/4,Ring/Simple/1,Ring/Simple/4,Tree/LL/1,Tree/LL128/1,Tree/Simple/1,Tree/Simple/4
run() { # label coll n configs [env]
  s=$(date +%s)
  env $5 timeout 150 ./bin/${2}_perf -t $3 -g 1 -b 8 -e 256K -f 2 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 150ms --out $OUT/r/${1}_n$3.jsonl --configs $4 > /dev/null 2>&1
  echo "$1 n $3 rc $? $(( $(date +%s) - s )) s"
}
FIT=GCCL_MODEL_FILE=$PWD/xeon_s23.json
for round in 1 2; do for n in 2 4 8 16; do
  if [ $round = 1 ]; then run Fbuiltin${round}_small allreduce $n $CONF; run Ffit${round}_small allreduce $n $CONF $FIT
  else run Ffit${round}_small allreduce $n $CONF $FIT; run Fbuiltin${round}_small allreduce $n $CONF; fi
done; done
GCONF=auto,OneShot/LL/1,Ring/LL/1,Ring/LL128/1,Ring/Simple/1,Ring/Simple/4
for c in allgather broadcast; do for n in 2 8; do
  run Gbuiltin1_$c $c $n $GCONF; run Gfit1_$c $c $n $GCONF $FIT
done; done
BIN=$PWD/bin OUT=$OUT/mid PASSES=3 bash ../../scripts/bench-mid.sh > $OUT/mid.txt 2>&1; tail -14 $OUT/mid.txt
cd $OUT && tar czf r.tgz r mid/raw.txt && rm -rf r && ls -la
