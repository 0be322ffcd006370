#!/bin/bash
# session 23, call 7, the final model (2 ranks take the board for one round only): held-out round H,
# auto with the built-in constants and with the Xeon's own (xeon_s23.json, fitted on call 1's pass A),
# each beside the forced configurations: allreduce 2-16 ranks, two alternating rounds; allgather and
# broadcast 2-16 ranks, one round; 8 B-256 KiB.
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
mkdir -p $OUT/r
CONF=auto,OneShot/LL/1,TwoShot/LL/1,Ring/LL/1,Ring/LL128/1,Ring/LL128/4,Ring/Simple/1,Ring/Simple/4,Tree/LL/1,Tree/LL128/1,Tree/Simple/1,Tree/Simple/4
GCONF=auto,OneShot/LL/1,Ring/LL/1,Ring/LL128/1,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4
run() { # label coll n configs [env]
  s=$(date +%s)
  env $5 timeout 150 ./bin/${2}_perf -t $3 -g 1 -b 8 -e 256K -f 2 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 150ms --out $OUT/r/${1}_n$3.jsonl --configs $4 > /dev/null 2>&1
  echo "$1 n $3 rc $? $(( $(date +%s) - s )) s"
}
FIT=GCCL_MODEL_FILE=$PWD/xeon_s23.json
for round in 1 2; do for n in 2 4 8 16; do
  if [ $round = 1 ]; then run Hbuiltin${round}_small allreduce $n $CONF; run Hfit${round}_small allreduce $n $CONF $FIT
  else run Hfit${round}_small allreduce $n $CONF $FIT; run Hbuiltin${round}_small allreduce $n $CONF; fi
done; done
for c in allgather broadcast; do for n in 2 4 8 16; do
  run Hbuiltin1_$c $c $n $GCONF; run Hfit1_$c $c $n $GCONF $FIT
done; done
cd $OUT && tar czf r.tgz r && rm -rf r && ls -la
