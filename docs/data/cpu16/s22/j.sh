#!/bin/bash
# session 22, call 10: perf -t 4 and -t 2, 64 B-4 KiB, a733803 (old) against this build (new) and this
# build with plain posts off (newLL), 5 alternating passes
cd "$(dirname "$0")"
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
for pass in 1 2 3 4 5; do for t in 2 4; do for b in old new newLL; do
  echo "pass$pass ${b} t$t $(timeout 60 ./ar_$b -t $t -b 64 -e 4K -f 2 -n 2000 -w 200 -c 0 -N 2 2>&1 | col)"
done; done; done > $OUT/t24.txt
cat $OUT/t24.txt | cut -c1-200
