#!/bin/bash
# session 21, call 5: the model's tie rule (more channels at the host cap), 2 and 4 ranks, 256 KiB-256 MiB,
# with the host's fitted constants; auto of the new build against forced channel counts, interleaved
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
O=$OUT/r; mkdir -p $O
for n in 2 4; do
  s=$(date +%s)
  GCCL_MODEL_FILE=s21/xeon16_s20_model.json timeout 200 ./ar_new -t $n -g 1 -b 256K -e 256M -f 4 -n 10 -w 3 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 1s --out $O/tie_n$n.jsonl --configs auto,Ring/Simple/1,Ring/Simple/2,Ring/Simple/3,Ring/Simple/4,Tree/Simple/4 > $O/tie_n$n.txt 2>&1; echo "n=$n rc=$? $(( $(date +%s) - s )) s"
done
cd $OUT && tar czf r.tgz r && rm -rf r
