#!/bin/bash
# session 22, call 5: auto against forced Ring/Simple/4 at 1 MiB across 4 processes (new build), what auto picks
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
GCCL_DEBUG=INFO timeout 30 ./ar_new --np 4 -b 256K -e 4M -f 2 -n 1 -w 0 -c 0 2>&1 | grep -E 'rank 0.*allreduce|host' | sort | uniq -c | head
for pass in 1 2 3; do
  echo "auto $(timeout 30 ./ar_new --np 4 -b 256K -e 4M -f 2 -n 20 -w 3 -c 0 2>&1 | col)"
  echo "R/S/4 $(GCCL_ALGO=Ring GCCL_PROTO=Simple GCCL_NCHANNELS=4 timeout 30 ./ar_new --np 4 -b 256K -e 4M -f 2 -n 20 -w 3 -c 0 2>&1 | col)"
  echo "maxch4 $(GCCL_MAX_NCHANNELS=4 timeout 30 ./ar_new --np 4 -b 256K -e 4M -f 2 -n 20 -w 3 -c 0 2>&1 | col)"
  echo "R/S/3 $(GCCL_ALGO=Ring GCCL_PROTO=Simple GCCL_NCHANNELS=3 timeout 30 ./ar_new --np 4 -b 256K -e 4M -f 2 -n 20 -w 3 -c 0 2>&1 | col)"
done
