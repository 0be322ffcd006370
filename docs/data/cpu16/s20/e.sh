#!/bin/bash
# session 20, call 5 (experiment): oversubscribed rings against the processor count (GOMAXPROCS)
cd "$(dirname "$0")/.."
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $6} END {print ""}'; }
for pass in 1 2; do
  for p in 2 4 8 16 32; do
    echo "p$pass n=8 Ring/Simple/4 GOMAXPROCS=$p $(GOMAXPROCS=$p ./ar_exp -t 8 -b 2K -e 512K -f 16 -n 20 -w 3 -c 0 --out-of-place-only --configs Ring/Simple/4 2>&1 | col)"
    echo "p$pass n=8 Ring/Simple/1 GOMAXPROCS=$p $(GOMAXPROCS=$p ./ar_exp -t 8 -b 2K -e 512K -f 16 -n 20 -w 3 -c 0 --out-of-place-only --configs Ring/Simple/1 2>&1 | col)"
  done
  for p in 4 8 16; do
    echo "p$pass n=16 Ring/Simple/1 GOMAXPROCS=$p $(GOMAXPROCS=$p ./ar_exp -t 16 -b 2K -e 512K -f 16 -n 20 -w 3 -c 0 --out-of-place-only --configs Ring/Simple/1 2>&1 | col)"
  done
  echo "p$pass n=8 Ring/Simple/4 GODEBUG=asyncpreemptoff=1 $(GODEBUG=asyncpreemptoff=1 ./ar_exp -t 8 -b 2K -e 512K -f 16 -n 20 -w 3 -c 0 --out-of-place-only --configs Ring/Simple/4 2>&1 | col)"
done
