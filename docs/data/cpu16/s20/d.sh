#!/bin/bash
# session 20, call 4 (experiment): ready() checks between the yield phase's Goscheds (GCCLX_YIELD_SPIN)
cd "$(dirname "$0")/.."
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $6} END {print ""}'; }
for pass in 1 2; do
for n in 8 16; do
  for v in 0 30 300 3000; do
    for cfg in Ring/Simple/4 Ring/Simple/2 Ring/LL/4; do
      echo "p$pass n=$n spin=$v $cfg $(GCCLX_YIELD_SPIN=$v ./ar_exp -t $n -b 8 -e 2M -f 16 -n 20 -w 3 -c 0 --out-of-place-only --configs $cfg 2>&1 | col)"
    done
  done
  echo "p$pass n=$n ref Ring/Simple/1 $(./ar_exp -t $n -b 8 -e 2M -f 16 -n 20 -w 3 -c 0 --out-of-place-only --configs Ring/Simple/1 2>&1 | col)"
done
done
# 2 ranks on 2 of the cores (taskset), 4 channels: the 2-core VM's case
for v in 0 30 300; do echo "taskset2 spin=$v $(GCCLX_YIELD_SPIN=$v taskset -c 0,1 ./ar_exp -t 2 -b 8 -e 2M -f 16 -n 50 -w 5 -c 0 --out-of-place-only --configs Ring/Simple/4 2>&1 | col)"; done
