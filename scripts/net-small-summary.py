#!/usr/bin/env python3
"""Summarise scripts/net-small-ab.sh output: per label, the median over
passes of out-of-place and in-place times (us), and the TCP and Open MPI
figures of the same passes."""
import re, statistics, sys
rows, ping, mpi = {}, [], {}
what = None
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("ping"):
        ping.append(float(re.search(r"median round trip ([\d.]+)", line).group(1)))
    elif line.startswith("mpi_tcp"):
        what = f[1]
    elif what and len(f) >= 4 and f[0] == "8":
        mpi.setdefault(what, []).append(float(f[2]))
        what = None
    elif len(f) >= 11 and f[0] in ("old", "new"):
        rows.setdefault((f[1], f[0]), []).append((float(f[7]), float(f[11])))
med = statistics.median
print("TCP ping-pong round trip: median %.1f us over %d passes" % (med(ping), len(ping)))
for k, v in sorted(mpi.items()):
    print("Open MPI (tcp) %s 8 B: %.1f us (passes %s)" % (k, med(v), ", ".join("%.1f" % x for x in v)))
print("| what | old out / in place (us) | new out / in place (us) |")
print("|---|---:|---:|")
for name in ("sr8", "ar8", "ar4K", "sr128M", "ar128M"):
    cells = []
    for v in ("old", "new"):
        t = rows.get((name, v), [])
        cells.append("%.1f / %.1f" % (med(x[0] for x in t), med(x[1] for x in t)) if t else "-")
    print("| %s | %s | %s |" % (name, cells[0], cells[1]))
