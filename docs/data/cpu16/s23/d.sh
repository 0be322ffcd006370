#!/bin/bash
# session 23, call 4: held out, large sizes: auto with the Xeon's own constants (xeon_s23.json, fitted
# on call 1's pass A, 8 B-256 KiB) beside the forced configurations, 256 KiB-256 MiB, 2-16 ranks.
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
mkdir -p $OUT/r
LCONF=auto,Ring/LL128/1,Ring/LL128/4,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4,Tree/Simple/1,Tree/Simple/2,Tree/Simple/4
for n in 2 4 8 16; do
  s=$(date +%s)
  GCCL_MODEL_FILE=$PWD/xeon_s23.json timeout 200 ./ar -t $n -g 1 -b 256K -e 256M -f 4 -n 3 -w 1 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 600ms --out $OUT/r/Efit_large_n$n.jsonl --configs $LCONF > /dev/null 2>&1
  echo "E fit large n $n rc $? $(( $(date +%s) - s )) s"
done
cd $OUT && tar czf r.tgz r && rm -rf r && ls -la
