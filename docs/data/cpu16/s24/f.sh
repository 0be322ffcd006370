#!/bin/bash
# session 24, call 6: broadcast and reduce chains with direct reads on and off (GCCL_P2P_DIRECT_DISABLE=1),
# Ring/Simple on 1, 2 and 4 channels, 4, 8 and 16 ranks, 16 KiB-16 MiB, two alternating rounds.
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
for f in bin/*.gz; do [ -f $f ] && gunzip -f $f; done; chmod +x bin/*
col() { awk '/# Config/{c=$4"/"$3"/"$5} !/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s %s:%s\n", c, $1, $6}'; }
for round in 1 2; do for c in broadcast reduce; do for n in 4 8 16; do for d in 0 1; do
  [ $round = 2 ] && d=$((1-d))
  if [ $d = 1 ]; then e="GCCL_P2P_DIRECT_DISABLE=1"; else e="GCCL_P2P_DIRECT_DISABLE="; fi
  env $e timeout 120 ./bin/${c}_perf -t $n -b 16K -e 16M -f 4 -n 40 -w 10 -c 0 --out-of-place-only --interleave \
    --configs Ring/Simple/1,Ring/Simple/2,Ring/Simple/4 2>&1 | col | sed "s|^|$round $c $n nodirect=$d |"
done; done; done; done
echo "done $SECONDS s"
