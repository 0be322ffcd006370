#!/bin/bash
# session 23, call 8 (diagnosis): 8 ranks' Ring/Simple with 1, 2 and 4 channels, broadcast against
# allreduce, 32 KiB-1 MiB: goroutine per rank (-t 8), one goroutine for all (-g 8), direct reads off.
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $6} END {print ""}'; }
for c in broadcast allreduce; do
  for mode in "-t 8" "-g 8"; do for cfg in Ring/Simple/1 Ring/Simple/2 Ring/Simple/4 OneShot/LL/1; do
    echo "$c $mode $cfg $(./bin/${c}_perf $mode -b 32K -e 1M -f 4 -n 200 -w 20 -c 0 --out-of-place-only --configs $cfg -N 3 2>&1 | col)"
  done; done
  for cfg in Ring/Simple/1 Ring/Simple/2 Ring/Simple/4; do
    echo "$c -t 8 nodirect $cfg $(GCCL_P2P_DIRECT_DISABLE=1 ./bin/${c}_perf -t 8 -b 32K -e 1M -f 4 -n 200 -w 20 -c 0 --out-of-place-only --configs $cfg -N 3 2>&1 | col)"
  done
done
