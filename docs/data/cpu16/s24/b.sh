#!/bin/bash
# session 24, call 2: the new build (chains one way on every channel), auto against the forced
# configurations beside it: broadcast and reduce 4-16 ranks 256 KiB-64 MiB (built-in constants);
# reduce 2-16 ranks 8 B-256 KiB (built-in and the Xeon's constants).
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
for f in bin/*.gz; do [ -f $f ] && gunzip -f $f; done; chmod +x bin/*
mkdir -p $OUT/r
run() { # label coll n configs b e [env]
  s=$(date +%s)
  env $7 timeout 170 ./bin/${2}_perf -t $3 -g 1 -b $5 -e $6 -f 4 -n 20 -w 3 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 200ms --out $OUT/r/${1}_n$3.jsonl --configs $4 > /dev/null 2>&1
  echo "$1 n $3 rc $? $(( $(date +%s) - s )) s"
}
LCONF=auto,OneShot/LL/1,Ring/LL128/1,Ring/LL128/4,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4
for c in broadcast reduce; do for n in 4 8 16; do run Jbuiltin_${c}large $c $n $LCONF 256K 64M; done; done
GCONF=auto,OneShot/LL/1,Ring/LL/1,Ring/LL128/1,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4
FIT=GCCL_MODEL_FILE=$PWD/xeon_s23.json
for n in 2 4 8 16; do
  s=$(date +%s)
  timeout 150 ./bin/reduce_perf -t $n -g 1 -b 8 -e 256K -f 2 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 150ms --out $OUT/r/Jbuiltin_reduce_n$n.jsonl --configs $GCONF > /dev/null 2>&1; echo "reduce builtin n $n rc $? $(( $(date +%s) - s )) s"
  env $FIT timeout 150 ./bin/reduce_perf -t $n -g 1 -b 8 -e 256K -f 2 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 150ms --out $OUT/r/Jfit_reduce_n$n.jsonl --configs $GCONF > /dev/null 2>&1; echo "reduce fit n $n rc $?"
done
echo "all done $SECONDS s"
cd $OUT && tar czf r.tgz r && rm -rf r && ls -la
