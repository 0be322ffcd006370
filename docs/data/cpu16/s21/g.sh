#!/bin/bash
# session 21, call 7: across processes (not folded), old build 2b786fa against this one, 8 and 16 processes, 8 B-32 KiB, auto
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
B="-n 300 -w 30 -z 2 -c 0 -a 3 -N 3 --out-of-place-only -b 8 -e 32K -f 4"
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $6} END {print ""}'; }
for pass in 1 2; do
  for np in 8 16; do
    for b in old new; do
      echo "pass$pass ${b}_np$np $(timeout 60 ./ar_$b --np $np $B 2>&1 | col)"
    done
  done
done
timeout 60 ./ar_new --np 4 -b 8 -e 1M -f 8 -n 5 -w 1 -c 1 --nchannels 1,4 > $OUT/check.txt 2>&1; echo "check rc=$? $(grep 'Out of bounds' $OUT/check.txt | head -2 | tr '\n' ' ')"
