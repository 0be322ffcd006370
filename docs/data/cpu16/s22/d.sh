#!/bin/bash
# session 22, call 4: large sizes across 4 and 8 processes: auto, old a733803 against new; forced Ring/Simple 1-4 channels (new)
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
O=$OUT
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
B="-b 1M -e 128M -f 8 -n 5 -w 2 -c 0 -N 2"
for pass in 1 2 3; do
  for np in 4 8; do
    for b in old new; do
      echo "pass$pass ${b} auto np$np $(timeout 80 ./ar_$b --np $np $B 2>&1 | col)"
    done
    for nc in 1 2 3 4; do
      echo "pass$pass new Ring/Simple/$nc np$np $(GCCL_ALGO=Ring GCCL_PROTO=Simple GCCL_NCHANNELS=$nc timeout 80 ./ar_new --np $np $B 2>&1 | col)"
    done
  done
done > $O/large4.txt
cat $O/large4.txt | cut -c1-300
timeout 30 ./ar_new --np 4 -b 1M -e 1M -n 1 -w 0 -c 0 2>&1 | grep -i 'channel' | head -3
GCCL_DEBUG=INFO timeout 30 ./ar_new --np 4 -b 32M -e 32M -n 1 -w 0 -c 0 2>&1 | grep -i 'INFO' | head -5
