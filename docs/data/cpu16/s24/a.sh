#!/bin/bash
# session 24, call 1: chains in one direction on every channel (new) against reversed odd chains (old):
# broadcast and reduce, 8 and 16 ranks, Ring/Simple on 1/2/4 channels beside the one-shot, two alternating
# rounds; then auto as run with the new build (broadcast, 2-16 ranks, 8 B-256 KiB, built-in and Xeon constants).
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
for f in bin/*.gz; do gunzip -f $f; done; chmod +x bin/*
mkdir -p $OUT/r
col() { awk '/# Config/{c=$4"/"$3"/"$5} !/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s %s:%s\n", c, $1, $6}'; }
for round in 1 2; do for c in broadcast reduce; do for n in 8 16; do for v in old new; do
  b=./bin/${c}_perf; [ $v = old ] && b=./bin/${c}_perf_old
  timeout 120 $b -t $n -b 16K -e 4M -f 4 -n 60 -w 10 -c 0 --out-of-place-only --interleave \
    --configs Ring/Simple/1,Ring/Simple/2,Ring/Simple/4,OneShot/LL/1 2>&1 | col | sed "s|^|$round $c $n $v |" >> $OUT/chains.txt
done; done; done; done
echo "chains done $SECONDS s"
GCONF=auto,OneShot/LL/1,Ring/LL/1,Ring/LL128/1,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4
run() { # label coll n configs [env]
  s=$(date +%s)
  env $5 timeout 150 ./bin/${2}_perf -t $3 -g 1 -b 8 -e 256K -f 2 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 150ms --out $OUT/r/${1}_n$3.jsonl --configs $4 > /dev/null 2>&1
  echo "$1 n $3 rc $? $(( $(date +%s) - s )) s"
}
FIT=GCCL_MODEL_FILE=$PWD/xeon_s23.json
for n in 2 4 8 16; do run Ibuiltin_broadcast broadcast $n $GCONF; run Ifit_broadcast broadcast $n $GCONF $FIT; done
echo "all done $SECONDS s"
cd $OUT && tar czf r.tgz r && rm -rf r && ls -la
