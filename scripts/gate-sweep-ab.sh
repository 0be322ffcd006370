#!/usr/bin/env bash
# gate-sweep-ab.sh: two builds of allreduce_perf side by side in the CI
# gate's own sweep (ci/perf-gate.sh: -t 2, 8 B-4 MiB by 8, --precision 2%
# --max-time 1s, -N 3), in alternating processes. Prints per build and size
# the median over the records of their median iteration, the run-to-run
# spread (the mean distance of a process's median from the median of all,
# each capped at 25%), and how many records of 8-512 B had a median
# iteration over 5 us: operations in a convoy of wake-ups or spins.
#
#   BASE=old/allreduce_perf NEW=bin/allreduce_perf PROCS=30 bash scripts/gate-sweep-ab.sh
set -eu
base=${BASE:?a build}; new=${NEW:?a build}; procs=${PROCS:-30}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
read -r -a flags <<<"${FLAGS:--t 2 -b 8 -e 4M -f 8 --precision 2% --max-time 1s --out-of-place-only -N 3}"
for i in $(seq -w 1 "$procs"); do
	"$base" "${flags[@]}" --out "$out/base-$i.jsonl" >/dev/null
	"$new" "${flags[@]}" --out "$out/new-$i.jsonl" >/dev/null
done
echo "# $(nproc) processors, $procs alternating processes of: ${flags[*]}; $(date -u +%F)"
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
for b in ("base", "new"):
    per, slow, small = {}, 0, 0
    for path in sorted(glob.glob(os.path.join(sys.argv[1], b + "-*.jsonl"))):
        by = {}
        for line in open(path):
            r = json.loads(line)
            by.setdefault(r["size"], []).append(r["median_us"])
            if r["size"] <= 512:
                small += 1
                slow += r["median_us"] > 5
        for s, v in by.items():
            per.setdefault(s, []).append(statistics.median(v))
    print(f"{b}: records of 8-512 B over 5 us: {slow} of {small}")
    for s, v in sorted(per.items()):
        m = statistics.median(v)
        spread = statistics.mean(min(abs(x / m - 1), 0.25) for x in v)
        print(f"  {s:>8} B  median {m:8.2f} us  spread {100 * spread:5.1f}%")
PY
