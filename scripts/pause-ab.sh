#!/usr/bin/env bash
# pause-ab.sh: two builds of allreduce_perf side by side, one goroutine per
# rank, in alternating runs, in each timing mode the issue 41 targets ask
# about: back to back (the plain loop), after a pause (-z 2: each operation
# waits for the one before) and per-iteration (--precision). Prints per build
# and mode each size's median time over the runs and how many rows of the
# small sizes (up to 512 B) took over 5 us, the mark of a wake-up paid per
# operation.
#
#   BASE=old/allreduce_perf NEW=bin/allreduce_perf RANKS=2 RUNS=12 bash scripts/pause-ab.sh
set -eu
base=${BASE:?a build}; new=${NEW:?a build}; ranks=${RANKS:-2}; runs=${RUNS:-12}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A modes=([b2b]="-n 1000 -w 100" [z2]="-n 200 -w 20 -z 2" [prec]="-n 50 -w 10 --precision 5% --max-time 200ms")
for r in $(seq "$runs"); do
	for m in b2b z2 prec; do
		for b in base new; do
			bin=$base; [ $b = new ] && bin=$new
			# shellcheck disable=SC2086 # the mode's flags split on purpose
			"$bin" -t "$ranks" -g 1 -b 8 -e 2M -f 8 -c 0 -a 3 --out-of-place-only ${modes[$m]} |
				awk -v b=$b -v m=$m '$1 ~ /^[0-9]+$/ {print b, m, $1, $6}' >>"$out/rows"
		done
	done
done
echo "# $(nproc) processors, $ranks ranks (-t $ranks), $runs alternating runs; $(date -u +%F)"
python3 - "$out/rows" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    b, m, size, us = line.split()
    t[(m, int(size), b)].append(float(us))
for m in ("b2b", "z2", "prec"):
    print(f"\n{m}: median time (us) over the runs, base / new; rows of 8-512 B over 5 us")
    bad = {b: sum(v > 5 for (mm, s, bb), vs in t.items() if mm == m and bb == b and s <= 512 for v in vs) for b in ("base", "new")}
    tot = {b: sum(len(vs) for (mm, s, bb), vs in t.items() if mm == m and bb == b and s <= 512) for b in ("base", "new")}
    for s in sorted({s for (mm, s, b) in t if mm == m}):
        print(f"  {s:>8} B  {statistics.median(t[(m, s, 'base')]):8.2f} / {statistics.median(t[(m, s, 'new')]):8.2f}")
    print(f"  rows over 5 us: base {bad['base']}/{tot['base']}, new {bad['new']}/{tot['new']}")
PY
