#!/usr/bin/env python3
"""gin_summary.py FILE: per process count and size, the host alltoall's median
busBw and each GIN kernel's (its ratio to the host's, min-max over rounds),
from scripts/devapi/gin.sh's lines."""
import collections
import statistics as st
import sys

d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, np, impl, size, bw = line.split()
    d[(int(np), int(size), impl)].append(float(bw))
print("| processes | size | host | -D 3 | -D 4 |\n|---|---|---|---|---|")
for np, size in sorted({(k[0], k[1]) for k in d}):
    h = st.median(d[(np, size, "host")])
    cells = []
    for impl in ("D3", "D4"):
        v = d.get((np, size, impl))
        cells.append(f"{st.median(v):.2f} ({st.median(v) / h:.2f}x) [{min(v):.2f}-{max(v):.2f}]" if v else "-")
    print(f"| {np} | {size >> 20} MiB | {h:.2f} | " + " | ".join(cells) + " |")
