#!/bin/bash
# session 20, call 7: channels past the cores run a few at a time (plan.gate): old (0bb7883) against new,
# alternating, 8 and 16 ranks in one process, 2 and 4 channels, 2 KiB-128 MiB
cd "$(dirname "$0")/.."
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $6} END {print ""}'; }
for pass in 1 2; do
  for n in 8 16; do
    for cfg in Ring/Simple/4 Ring/Simple/2 Ring/LL128/4 Tree/Simple/4; do
      for b in ar_old allreduce_perf; do
        echo "p$pass n=$n $cfg $b small $(./$b -t $n -b 2K -e 1M -f 8 -n 20 -w 3 -c 0 --out-of-place-only --configs $cfg 2>&1 | col)"
      done
    done
    for cfg in Ring/Simple/4 Ring/Simple/1; do
      for b in ar_old allreduce_perf; do
        echo "p$pass n=$n $cfg $b large $(./$b -t $n -b 8M -e 128M -f 4 -n 3 -w 1 -c 0 --out-of-place-only --configs $cfg 2>&1 | col)"
      done
    done
  done
done
# correctness of gated plans: every type, 16 ranks x 4 channels, data checked
./allreduce_perf -t 16 -b 8 -e 4M -f 16 -n 2 -w 1 -c 1 --configs Ring/Simple/4,Ring/LL/4,Tree/LL128/4 -d all > $OUT/check16.txt 2>&1; echo "check rc=$? $(grep 'Out of bounds' $OUT/check16.txt)"
