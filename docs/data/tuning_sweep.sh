#!/usr/bin/env bash
# Forced-configuration allreduce sweeps for the cost model (issue 4): every
# algorithm x protocol x {1,2} channels, for 2, 4 and 8 ranks with 1 and 2
# ranks per host (--ranks-per-host, one process), 8 B .. 32 MiB by 4x.
# Small sizes (<= 128 KiB) run 50 timed iterations, large ones 10; LL stops
# at 512 KiB (it moves ~0.4 GB/s; its crossovers are far below). Records
# carry per-iteration times and their median.
#
#   bash docs/data/tuning_sweep.sh PASS    # writes results/local/tuning/PASS_n<ranks>_per<rph>.jsonl
#
# The committed passes in docs/data/tuning/ are these files gzipped (gzip -9 -n).
# Passes 5 and 6 (1 MiB buffer, cited by no document now) are in git history:
# git show 5d1a35a:docs/data/tuning/pass5_n2_per1.jsonl.gz.
#
# Run on an idle machine; one pass takes about 5 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
pass=${1:?usage: tuning_sweep.sh PASS-NAME}
out=results/local/tuning
mkdir -p "$out" .bin
go build -o .bin/allreduce_perf ./cmd/allreduce_perf
common=(-f 4 -w 3 -c 0 -I 1 --algo all --nchannels 1,2)
for n in 2 4 8; do
  for per in 1 2; do
    f="$out/${pass}_n${n}_per${per}.jsonl"
    rm -f "$f" "$f".*
    run() { .bin/allreduce_perf -t "$n" --ranks-per-host "$per" "${common[@]}" "$@" > /dev/null; }
    run -b 8 -e 128K -n 50 --proto all --out "$f.small"
    run -b 512K -e 32M -n 10 --proto LL128,Simple --out "$f.large"
    run -b 512K -e 512K -n 10 --proto LL --out "$f.ll"
    cat "$f.small" "$f.large" "$f.ll" > "$f" && rm "$f.small" "$f.large" "$f.ll"
    echo "$f: $(wc -l < "$f") records"
  done
done
