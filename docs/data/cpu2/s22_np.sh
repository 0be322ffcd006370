#!/bin/bash
# session 22, this 2-core VM: across processes, forced Ring/Simple channels, old a733803 against new,
# alternating, -N 3 loops; summary: python3 docs/data/cpu16/s22/summary.py docs/data/cpu2/s22_np.txt
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
B="-b 2K -e 1M -f 8 -n 20 -w 3 -c 0 -N 3"
for pass in 1 2 3; do
  for cfg in 2:1 2:2 2:4 4:2; do
    np=${cfg%:*}; nc=${cfg#*:}
    for b in old new; do
      echo "pass$pass ${b} np$np ch$nc $(GCCL_ALGO=Ring GCCL_PROTO=Simple GCCL_NCHANNELS=$nc timeout 60 /tmp/ar_${b}22 --np $np $B 2>&1 | col)"
    done
  done
done
