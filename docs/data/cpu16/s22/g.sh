#!/bin/bash
# session 22, call 7: plain one-shot posts against LL lines, side by side with the spin (FloorSideBySide,
# GCCL_TMP_PLAINMIN: 0 = every post plain, 999999999 = every post LL), 4 alternating passes; then perf
# -t N 8 B-16 KiB, old a733803 against new (plain from 512 B), 2 passes
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
for p in 1 2 3 4; do for m in 0 999999999; do
  GCCL_TMP_PLAINMIN=$m ./plain.test -test.run '^$' -test.bench 'FloorSideBySide' -test.benchtime 20x 2>&1 | grep Floor | awk -v m=$m -v p=$p '{print "pass" p, "plainmin=" m, $1, $3, $5, $7}'
done; done > $OUT/sbs.txt
cat $OUT/sbs.txt
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
for pass in 1 2; do for n in 2 4 8 16; do for b in old new; do
  echo "pass$pass ${b} t$n $(timeout 60 ./ar_$b -t $n -b 64 -e 16K -f 2 -n 2000 -w 200 -c 0 -N 2 2>&1 | col)"
done; done; done > $OUT/tn.txt
timeout 60 ./ar_new -t 4 -b 8 -e 64K -f 2 -n 5 -w 1 -c 1 > $OUT/check.txt 2>&1; echo "check rc=$? $(grep 'Out of bounds' $OUT/check.txt | head -2 | tr '\n' ' ')"
cd $OUT && tar czf r.tgz *.txt && rm -f *.txt
