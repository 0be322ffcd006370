#!/usr/bin/env python3
"""rounds.py DIR...: medians over rounds of each run's median iteration (us)
from scripts/devapi/measure.sh runs made one round at a time, each into a
directory named LAYOUT-BUILD-ROUND (e.g. dev-t-new-2: -t layout, the new
build, round 2), so that two builds alternate round by round. Prints, per
collective, layout and rank count, a table of size by BUILD:CONFIG, with
[min-max] over the rounds."""
import collections
import glob
import json
import os
import statistics
import sys

d = collections.defaultdict(list)
for top in sys.argv[1:]:
    for sub in sorted(glob.glob(os.path.join(top, "*-*-*-*"))):
        _, lay, build, _ = os.path.basename(sub).split("-")
        for f in glob.glob(os.path.join(sub, "*.jsonl")):
            name, g, _ = os.path.basename(f)[: -len(".jsonl")].split(".")
            coll, cfg = name.split("-", 1)
            for line in open(f):
                r = json.loads(line)
                if r.get("placement", "out_of_place") not in ("out_of_place", "OutOfPlace", "out-of-place"):
                    continue
                d[(coll, lay, g, f"{build}:{cfg}", r["size"])].append(r.get("median_us", r["time_us"]))
for coll in sorted({k[0] for k in d}):
    for lay in sorted({k[1] for k in d if k[0] == coll}):
        for g in sorted({k[2] for k in d if k[:2] == (coll, lay)}, key=lambda s: int(s[1:])):
            cfgs = sorted({k[3] for k in d if k[:3] == (coll, lay, g)})
            sizes = sorted({k[4] for k in d if k[:3] == (coll, lay, g)})
            print(f"\n{coll} -{lay} {g[1:]} ranks: median over rounds of each run's time (-I 1: its median iteration; PERITER=0: the loop's mean), us [min-max]")
            print("| size | " + " | ".join(cfgs) + " |")
            print("|---" * (len(cfgs) + 1) + "|")
            for s in sizes:
                cells = []
                for c in cfgs:
                    v = d[(coll, lay, g, c, s)]
                    cells.append(f"{statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]" if v else "-")
                print(f"| {s} | " + " | ".join(cells) + " |")
