#!/bin/bash
# session 23, call 2: held out (pass C, three alternating rounds): auto with the built-in constants
# against auto with the Xeon's own (xeon_s23.json: tune constants on call 1's pass A), each beside
# the forced configurations, 2-16 ranks in one process, 8 B-256 KiB.
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
CONF=auto,OneShot/LL/1,TwoShot/LL/1,Ring/LL/1,Ring/LL128/1,Ring/LL128/4,Ring/Simple/1,Ring/Simple/4,Tree/LL/1,Tree/LL128/1,Tree/Simple/1,Tree/Simple/4
mkdir -p $OUT/r
run() { # model-label round n [env]
  s=$(date +%s)
  env $4 timeout 150 ./ar -t $3 -g 1 -b 8 -e 256K -f 2 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 150ms --out $OUT/r/${1}${2}_small_n$3.jsonl --configs $CONF > /dev/null 2>&1
  echo "$1 round $2 n $3 rc $? $(( $(date +%s) - s )) s"
}
for round in 1 2 3; do for n in 2 4 8 16; do
  if [ $((round % 2)) = 1 ]; then run builtin $round $n; run fit $round $n GCCL_MODEL_FILE=$PWD/xeon_s23.json
  else run fit $round $n GCCL_MODEL_FILE=$PWD/xeon_s23.json; run builtin $round $n; fi
done; done
GCCL_DEBUG=INFO GCCL_MODEL_FILE=$PWD/xeon_s23.json ./ar -t 2 -b 1K -e 1K -n 1 -w 0 -c 0 2>&1 | grep -iE "model|constants" | head -3
cd $OUT && tar czf r.tgz r && rm -rf r && ls -la
