#!/usr/bin/env python3
"""Summarise scripts/cpu-scale.sh output: latency medians (Open MPI, gccl
one goroutine per rank, gccl one process per rank) and, per rank count and
size, auto against the best forced configuration of the small sweep.

usage: scripts/cpu-scale-summary.py OUT_DIR   (e.g. docs/data/cpu16)"""
import collections, glob, gzip, json, os, re, statistics, sys

out = sys.argv[1]


def lines(path):
    """The lines of path, or of path.gz."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt")
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


lat = collections.defaultdict(list)
cur = None
for line in lines(f"{out}/latency.txt"):
    m = re.match(r"=== (\S+) n=(\d+) pass=(\d+)", line)
    if m:
        cur = (m.group(1), int(m.group(2)))
        continue
    f = line.split()
    if cur and len(f) >= 6 and f[0].isdigit():
        lat[(cur[0], cur[1], int(f[0]))].append(float(f[2] if cur[0] == "mpi" else f[5]))
print("| ranks | size (B) | Open MPI (us) | gccl -t N (us) | gccl --np N (us) |")
print("|---|---|---|---|---|")
for n in sorted({k[1] for k in lat}):
    for size in (8, 64, 512, 1024):
        cells = []
        for who in ("mpi", "gccl-t", "gccl-np"):
            v = lat.get((who, n, size))
            cells.append(f"{statistics.median(v):.2f}" if v else "-")
        if any(c != "-" for c in cells):
            print(f"| {n} | {size} | " + " | ".join(cells) + " |")
print()
print("| ranks | size (B) | auto picks | auto (us) | best forced | best (us) | auto/best |")
print("|---|---|---|---|---|---|---|")
for path in sorted(glob.glob(f"{out}/small_n*.jsonl*"), key=lambda p: int(re.search(r"n(\d+)", p).group(1))):
    rows = collections.defaultdict(dict)
    for line in lines(path):
        r = json.loads(line)
        rows[(r["nranks"], r["size"])][(r["algorithm"], r["protocol"], r["channels"])] = r
    for (n, size), cfgs in sorted(rows.items()):
        auto = cfgs.get(("auto", "auto", 0))
        forced = {k: v for k, v in cfgs.items() if k[0] != "auto"}
        if not auto or not forced:
            continue
        bk = min(forced, key=lambda k: forced[k]["time_us"])
        b = forced[bk]["time_us"]
        pick = f'{auto["chosen_algo"]}/{auto["chosen_proto"]}/{auto["chosen_channels"]}'
        print(f'| {n} | {size} | {pick} | {auto["time_us"]:.1f} | {bk[0]}/{bk[1]}/{bk[2] or "auto"} | {b:.1f} | {auto["time_us"]/b:.2f} |')
