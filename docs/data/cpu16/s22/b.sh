#!/bin/bash
# session 22, call 2: across processes, forced Ring/Simple channels, old a733803 against new, 3 passes, -N 3 loops
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
O=$OUT
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
B="-b 2K -e 1M -f 8 -n 20 -w 3 -c 0 -N 3"
for pass in 1 2 3; do
  for cfg in 8:2 8:4 16:2 16:4; do
    np=${cfg%:*}; nc=${cfg#*:}
    for b in old new; do
      echo "pass$pass ${b} np$np ch$nc $(GCCL_ALGO=Ring GCCL_PROTO=Simple GCCL_NCHANNELS=$nc timeout 45 ./ar_$b --np $np $B 2>&1 | col)"
    done
  done
done > $O/np2.txt
cat $O/np2.txt | cut -c1-400
