#!/bin/bash
# session 23, call 3: (1) a large sweep to fit the Xeon's constants on (pass A, 256 KiB-256 MiB,
# the built-in constants' auto beside the forced configurations); (2) a held-out small round D
# (two alternating rounds) of auto with the built-in constants against auto with the Xeon's own
# (xeon_s23.json: tune constants on call 1's pass A), Simple/LL128 channel threshold 32 KiB in both.
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
mkdir -p $OUT/r
LCONF=auto,Ring/LL128/1,Ring/LL128/4,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4,Tree/Simple/1,Tree/Simple/2,Tree/Simple/4
for n in 2 4 8 16; do
  s=$(date +%s)
  timeout 200 ./ar -t $n -g 1 -b 256K -e 256M -f 4 -n 3 -w 1 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 600ms --out $OUT/r/A_large_n$n.jsonl --configs $LCONF > /dev/null 2>&1
  echo "A large n $n rc $? $(( $(date +%s) - s )) s"
done
CONF=auto,OneShot/LL/1,TwoShot/LL/1,Ring/LL/1,Ring/LL128/1,Ring/LL128/4,Ring/Simple/1,Ring/Simple/4,Tree/LL/1,Tree/LL128/1,Tree/Simple/1,Tree/Simple/4
run() { # model-label round n [env]
  s=$(date +%s)
  env $4 timeout 150 ./ar -t $3 -g 1 -b 8 -e 256K -f 2 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 150ms --out $OUT/r/${1}${2}_small_n$3.jsonl --configs $CONF > /dev/null 2>&1
  echo "$1 round $2 n $3 rc $? $(( $(date +%s) - s )) s"
}
for round in 1 2; do for n in 2 4 8 16; do
  if [ $((round % 2)) = 1 ]; then run Dbuiltin $round $n; run Dfit $round $n GCCL_MODEL_FILE=$PWD/xeon_s23.json
  else run Dfit $round $n GCCL_MODEL_FILE=$PWD/xeon_s23.json; run Dbuiltin $round $n; fi
done; done
cd $OUT && tar czf r.tgz r && rm -rf r && ls -la
