#!/bin/bash
# session 20, call 3 (experiment, not committed code): Ring/Simple/4 past the cores at 8 and 16 ranks;
# variants: default, longer yield phase (GCCLX_YIELD_US), spinning when oversubscribed (GCCLX_SPIN_OVERSUB)
cd "$(dirname "$0")/.."
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $6} END {print ""}'; }
for pass in 1 2; do
for n in 8 16; do
  for v in "default" "GCCLX_YIELD_US=500" "GCCLX_YIELD_US=5000" "GCCLX_SPIN_OVERSUB=1" "GCCLX_SPIN_OVERSUB=1 GCCLX_YIELD_US=500"; do
    for cfg in Ring/Simple/4 Ring/Simple/2 Tree/Simple/4; do
      e=""; [ "$v" != default ] && e="$v"
      echo "p$pass n=$n $v $cfg $(env $e ./ar_exp -t $n -b 2K -e 2M -f 8 -n 20 -w 3 -c 0 --out-of-place-only --configs $cfg 2>&1 | col)"
    done
  done
  echo "p$pass n=$n ref Ring/Simple/1 $(./ar_exp -t $n -b 2K -e 2M -f 8 -n 20 -w 3 -c 0 --out-of-place-only --configs Ring/Simple/1 2>&1 | col)"
done
done
