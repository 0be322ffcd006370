#!/bin/bash
# session 21, call 4: auto against forced configurations, 256 KiB-256 MiB, 4/8/16 ranks in one process,
# with the host's fitted constants (s20 refit), final build (folding)
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
O=$OUT/r; mkdir -p $O
CFG=auto,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4,Ring/LL128/2,Ring/LL128/4,Tree/Simple/2,Tree/Simple/4
for n in 4 8 16; do
  s=$(date +%s)
  GCCL_MODEL_FILE=s21/xeon16_s20_model.json timeout 170 ./ar_new -t $n -g 1 -b 256K -e 256M -f 4 -n 10 -w 3 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 1s --out $O/big_n$n.jsonl --configs $CFG > $O/big_n$n.txt 2>&1; echo "n=$n rc=$? $(( $(date +%s) - s )) s"
done
cd $OUT && tar czf r.tgz r && rm -rf r
