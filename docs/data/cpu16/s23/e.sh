#!/bin/bash
# session 23, call 5: the plain payload's lines prefetched once its flag is seen (pf) against
# 74de5e5 (base): FloorSideBySide (2 ranks, 8 B/64 B/1 KiB against the spin round trip), 6
# alternating passes; then the one-shot forced, 2 and 8 ranks, 1-16 KiB, 4 alternating passes.
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
for p in 1 2 3 4 5 6; do for b in base pf; do
  ./$b.test -test.run '^$' -test.bench FloorSideBySide -test.benchtime 20x | grep Floor | sed "s/^/pass$p $b /"
done; done > $OUT/floor_pf.txt
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
for p in 1 2 3 4; do for n in 2 8; do for b in base pf; do
  echo "pass$p $b n$n $(./ar_$b -t $n -b 1K -e 16K -f 2 -n 2000 -w 200 -c 0 --configs OneShot/LL/1 2>&1 | col)"
done; done; done > $OUT/os_pf.txt
cat $OUT/floor_pf.txt | awk '{print $1,$2,$3,$7,$9}'; cat $OUT/os_pf.txt
