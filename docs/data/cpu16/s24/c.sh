#!/bin/bash
# session 24, call 3: the final model (reduce chains priced back to back, the one-shot broadcast's
# readers wait for one post), held out: auto as run against the forced configurations beside it,
# broadcast and reduce 2-16 ranks 8 B-256 KiB, built-in and the Xeon's constants alternating, two
# rounds; reduce and broadcast 4-16 ranks 256 KiB-64 MiB built in, one round.
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
for f in bin/*.gz; do [ -f $f ] && gunzip -f $f; done; chmod +x bin/*
mkdir -p $OUT/r
GCONF=auto,OneShot/LL/1,Ring/LL/1,Ring/LL128/1,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4
LCONF=auto,OneShot/LL/1,Ring/LL128/1,Ring/LL128/4,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4
FIT=GCCL_MODEL_FILE=$PWD/xeon_s23.json
small() { # label coll n [env]
  env $4 timeout 150 ./bin/${2}_perf -t $3 -g 1 -b 8 -e 256K -f 2 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 150ms --out $OUT/r/${1}_n$3.jsonl --configs $GCONF > /dev/null 2>&1; echo "$1 n $3 rc $?"
}
for round in 1 2; do for c in reduce broadcast; do for n in 2 4 8 16; do
  if [ $round = 1 ]; then small Kbuiltin${round}_$c $c $n; small Kfit${round}_$c $c $n $FIT
  else small Kfit${round}_$c $c $n $FIT; small Kbuiltin${round}_$c $c $n; fi
done; done; done
echo "small done $SECONDS s"
for c in reduce broadcast; do for n in 4 8 16; do
  timeout 170 ./bin/${c}_perf -t $n -g 1 -b 256K -e 64M -f 4 -n 20 -w 3 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 200ms --out $OUT/r/Kbuiltin1_${c}large_n$n.jsonl --configs $LCONF > /dev/null 2>&1; echo "$c large n $n rc $?"
done; done
echo "all done $SECONDS s"
cd $OUT && tar czf r.tgz r && rm -rf r && ls -la
