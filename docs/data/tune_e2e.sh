#!/usr/bin/env bash
# Issue 5's end-to-end check on this machine: a sweep of allreduce and
# allgather for 2 and 4 ranks over every protocol, both algorithms and 1, 2
# and 4 channels (plus the stack's own choice), 8 B..64 MiB by 4x; a table
# from it; and a held-out sweep at the midpoints (16 B..32 MiB by 4x) to
# validate the table against the built-in default. A shape's configurations
# are measured side by side on one set of communicators (tune sweep's
# default --interleave), in 3 separate runs (--repeat 3). Resumable: rerun
# to go on after an interruption.
#
# The noise floor: a second held-out sweep, and a table built from the
# first held-out sweep validated on the second (same sizes, another run):
# what even a perfect picker scores against run-to-run noise.
#
# OUT_DIR picks the folder for the summaries kept in git (default
# docs/data/tune_epyc_buff1m, the run on the AMD EPYC VM with the 1 MiB
# Simple buffer); RAW_DIR the folder for the raw sweeps, which git ignores
# (default results/local/<name of OUT_DIR>; rerun to resume there); TUNE a
# prebuilt tune binary (the device host has no Go).

set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT_DIR:-docs/data/tune_epyc_buff1m}
raw=${RAW_DIR:-results/local/$(basename "$out")}
mkdir -p "$out" "$raw" .bin
if [[ -z ${TUNE:-} ]]; then
	go build -o .bin/tune ./cmd/tune
	TUNE=.bin/tune
fi
axes=(--colls allreduce,allgather --ranks 2,4 --proto all --algo all --nchannels 1,2,4 -f 4 -n 5 -w 3 --precision 2% --max-time 1s --repeat 3)
sweep() { # NAME -b -e
	"$TUNE" sweep "${axes[@]}" -b "$2" -e "$3" --output "$raw/$1.jsonl"
}
sweep sweep 8 64M
sweep heldout 16 32M
"$TUNE" fit "$raw/sweep.jsonl" --output "$out/models.json" --force > "$out/fit.txt"
"$TUNE" table "$raw/sweep.jsonl" --models "$out/models.json" --output "$out/table.json" --nccl-csv "$out/nccl_tuner.conf" --force > "$out/table.txt"
"$TUNE" validate --points --table "$out/table.json" "$raw/heldout.jsonl" > "$out/validate.txt"
sweep heldout2 16 32M
"$TUNE" validate --points --table "$out/table.json" "$raw/heldout2.jsonl" > "$out/validate2.txt"
"$TUNE" table "$raw/heldout.jsonl" --output "$out/floor_table.json" --force > /dev/null
"$TUNE" validate --points --table "$out/floor_table.json" "$raw/heldout2.jsonl" > "$out/floor.txt"
tail -3 "$out/validate.txt"
tail -3 "$out/validate2.txt"
tail -3 "$out/floor.txt"
