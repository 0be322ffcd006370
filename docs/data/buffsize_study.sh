#!/usr/bin/env bash
# The Simple buffer study behind proto.DefaultSimpleBuffSize (1 MiB): ring
# and tree Simple allreduce and ring Simple allgather on 2 and 4 ranks, 1, 2
# and 4 channels, with 512 KiB, 1 MiB, 2 MiB and 4 MiB (NCCL's) buffers
# measured 64 KiB..64 MiB by 4x. A buffer size is fixed when the
# communicators start, so each buffer runs on communicators of its own (a
# shape's configurations side by side on them, tune sweep's --interleave),
# in 3 separate runs (--repeat 3) whose median is taken: one run's luck
# (where its buffers and goroutines landed) moved single points by 2x. Prints
# each buffer's time over 1 MiB's, and geometric means over the
# configurations and sizes from 1 MiB up.
#
#   bash docs/data/buffsize_study.sh     # ~20 min on 2 idle cores
#
# The raw records go to $RAW (default /tmp/gccl-buffsize.jsonl, not kept:
# this script makes them again); the summary to docs/data/buffsize/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
raw=${RAW:-/tmp/gccl-buffsize.jsonl}
mkdir -p .bin docs/data/buffsize
go build -o .bin/tune ./cmd/tune
.bin/tune sweep --colls allreduce,allgather --ranks 2,4 --proto Simple --algo all --nchannels 1,2,4 \
	--buffsize 512K,1M,2M,4M --auto=false -b 64K -e 64M -f 4 -n 5 -w 2 --precision 2% --max-time 1s --repeat 3 --output "$raw"
python3 docs/data/buffsize_summary.py "$raw" | tee docs/data/buffsize/summary.txt
