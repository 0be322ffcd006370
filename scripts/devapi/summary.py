#!/usr/bin/env python3
"""summary.py OUT: medians over rounds of each run's median iteration time (us),
per collective, rank count and configuration, from scripts/devapi/measure.sh's
records."""
import collections
import glob
import json
import os
import statistics
import sys

d = collections.defaultdict(list)
for f in glob.glob(os.path.join(sys.argv[1], "*.jsonl")):
    name, g, _ = os.path.basename(f)[: -len(".jsonl")].split(".")
    coll, cfg = name.split("-", 1)
    for line in open(f):
        r = json.loads(line)
        d[(coll, g, cfg, r["size"])].append(r.get("median_us", r["time_us"]))
for coll in sorted({k[0] for k in d}):
    cfgs = sorted({k[2] for k in d if k[0] == coll})
    for g in sorted({k[1] for k in d if k[0] == coll}):
        sizes = sorted({k[3] for k in d if k[0] == coll and k[1] == g})
        print(f"\n{coll} {g}: median over rounds of each run's median iteration (us)")
        print("| size | " + " | ".join(cfgs) + " |")
        print("|---" * (len(cfgs) + 1) + "|")
        for s in sizes:
            cells = [f"{statistics.median(d[(coll, g, c, s)]):.2f}" if d[(coll, g, c, s)] else "-" for c in cfgs]
            print(f"| {s} | " + " | ".join(cells) + " |")
