#!/usr/bin/env python3
"""Medians of FloorSideBySide lines 'passN build Benchmark.../size=S spin_us us/op x_spin', per build and size.
usage: sbs_summary.py FILE..."""
import sys, statistics, collections
v = collections.defaultdict(lambda: ([], [], []))
for fn in sys.argv[1:]:
    for line in open(fn):
        f = line.split()
        if len(f) < 6 or not f[0].startswith("pass"):
            continue
        size = f[2].split("size=")[1].split("-")[0]
        spin, op, x = map(float, f[3:6])
        for lst, val in zip(v[(f[1], size)], (spin, op, x)):
            lst.append(val)
print("| build | size | passes | allreduce us (median, range) | spin us (median) | / spin (median, range) |")
print("|---|---|---:|---:|---:|---:|")
for (b, size), (spin, op, x) in sorted(v.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"| {b} | {size} | {len(x)} | {statistics.median(op):.3f} ({min(op):.3f}-{max(op):.3f}) | {statistics.median(spin):.3f} | {statistics.median(x):.2f}x ({min(x):.2f}-{max(x):.2f}) |")
