"""Summarises buffsize_study.sh's records: t(buffer) / t(1 MiB) per point
(each the median of the runs), and their geometric means from 1 MiB up."""
import json, math, statistics, sys
from collections import defaultdict

runs = defaultdict(list)  # point -> the runs' medians
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["placement"] != "out-of-place":
        continue
    key = (r["collective"], r["nranks"], r["algorithm"], r["channels"], r["size"])
    runs[key + (r["buffsize"],)].append(r.get("median_us") or r["time_us"])
t = {k: statistics.median(v) for k, v in runs.items()}

MB = 1 << 20
buffs = [512 << 10, 1 * MB, 2 * MB, 4 * MB]
ratios = defaultdict(list)   # buffer -> ratios over points >= 1 MiB
big = defaultdict(list)      # buffer -> ratios over points >= 16 MiB
rows = []
for key in sorted({k[:-1] for k in t}):
    base = t.get(key + (MB,))
    if not base:
        continue
    row = [key]
    for b in buffs:
        x = t.get(key + (b,))
        row.append(x / base if x else float("nan"))
        if x and key[-1] >= MB:
            ratios[b].append(x / base)
            if key[-1] >= 16 * MB:
                big[b].append(x / base)
    rows.append((row, base))

gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
print("%-10s %5s %-5s %3s %9s %10s  %7s %7s %7s %7s" % ("coll", "ranks", "algo", "ch", "size", "1M us", "512K", "1M", "2M", "4M"))
for row, base in rows:
    (coll, n, algo, ch, size) = row[0]
    print("%-10s %5d %-5s %3d %9d %10.1f  " % (coll, n, algo, ch, size, base) + " ".join("%7.2f" % x for x in row[1:]))
print()
for b in buffs:
    print("buffer %4d KiB: geomean t/t(1M) from 1 MiB up %.2f (%d points), from 16 MiB up %.2f (%d points)"
          % (b >> 10, gm(ratios[b]), len(ratios[b]), gm(big[b]), len(big[b])))
