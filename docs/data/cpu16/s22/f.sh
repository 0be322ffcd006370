#!/bin/bash
# session 22, call 6: auto across 4, 8 and 16 processes, old a733803 against new (folding across
# processes, auto channels at most process 0's processors less one per rank), 3 alternating passes
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
for pass in 1 2 3; do
  for np in 4 8 16; do
    for b in old new; do
      echo "pass$pass ${b} auto-small np$np $(timeout 60 ./ar_$b --np $np -b 8 -e 32K -f 8 -n 100 -w 10 -c 0 -N 2 2>&1 | col)"
      echo "pass$pass ${b} auto-large np$np $(timeout 90 ./ar_$b --np $np -b 256K -e 64M -f 4 -n 10 -w 2 -c 0 -N 2 2>&1 | col)"
    done
  done
done > $OUT/auto6.txt
cat $OUT/auto6.txt | cut -c1-250
GCCL_DEBUG=INFO timeout 30 ./ar_new --np 4 -b 1M -e 1M -n 1 -w 0 -c 0 2>&1 | grep -E 'host|rank 0.*allreduce' | sort -u | head -3
