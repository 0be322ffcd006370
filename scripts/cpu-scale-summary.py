#!/usr/bin/env python3
"""Summarise scripts/cpu-scale.sh output: latency medians (Open MPI, gccl
one goroutine per rank, gccl one process per rank) and, per rank count and
size, auto against the best forced configuration of the small sweep and of
the large sweep (sweep_n*/large_n*), and the large sweep's busBw against Open
MPI's (sweep.txt). Parts whose files are missing are left out.

Auto and the forced configurations are compared by each record's median
iteration (median_us, from per-iteration timing: -I 1 or --precision, as an
--interleave run records), else its mean time (time_us).

usage: scripts/cpu-scale-summary.py OUT_DIR [PREFIX]   (e.g. docs/data/cpu16)
PREFIX names the sweeps PREFIXsmall_n*, PREFIXlarge_n* (e.g. fitmodel_ in
docs/data/cpu16/s16)."""
import collections, glob, gzip, json, os, re, statistics, sys


def mpi_medians(d):
    """Open MPI's median per (ranks, size) from mpi_perf's mpi_n*.txt in d."""
    mpi = {}
    for path in glob.glob(os.path.join(d, "mpi_n*.txt")):
        n = int(re.search(r"_n(\d+)\.txt$", path).group(1))
        for line in open(path, errors="replace"):
            f = line.split()
            if len(f) >= 3 and f[0].isdigit():
                mpi[(n, int(f[0]))] = float(f[2])
    return mpi


def scale(d):
    """--scale DIR: cpu-scale.sh's scale step. Per rank count, per size:
    Open MPI's median (mpi_n*.txt), then gccl's time (the slowest rank, -a 3)
    for -t N, -g N and --np N back to back and after a pause (-z 2), with
    each after-a-pause point's i_max/i_min where recorded."""
    mpi = mpi_medians(d)
    g = {}
    spread = {}
    for path in glob.glob(os.path.join(d, "gccl_*_n*.jsonl")):
        m = re.search(r"gccl_(\w+)_(b2b|z2)_n(\d+)\.jsonl$", path)
        mode, wait, n = m.group(1), m.group(2), int(m.group(3))
        for line in open(path):
            r = json.loads(line)
            if r.get("placement") != "out-of-place":
                continue
            g[(n, mode, wait, r["size"])] = r["time_us"]
            lo, hi = r.get("min_us"), r.get("max_us")
            if lo and hi:
                spread[(n, mode, wait, r["size"])] = hi / lo
    ranks = sorted({k[0] for k in g} | {k[0] for k in mpi})
    cols = [(m, w) for w in ("b2b", "z2") for m in ("t", "g", "np")]
    for n in ranks:
        sizes = sorted({k[3] for k in g if k[0] == n} | {k[1] for k in mpi if k[0] == n})
        print(f"\n## {n} ranks: us (the slowest rank); z2 columns: after a pause (-z 2), [i_max/i_min]")
        print("| size (B) | Open MPI | " + " | ".join(f"-{m} {w}" for m, w in cols) + " |")
        print("|---" * (2 + len(cols)) + "|")
        for s in sizes:
            row = [str(s), f"{mpi[(n, s)]:.2f}" if (n, s) in mpi else "-"]
            for m, w in cols:
                t = g.get((n, m, w, s))
                cell = "-" if t is None else f"{t:.2f}"
                if t is not None and w == "z2" and (n, m, w, s) in spread:
                    cell += f" [{spread[(n, m, w, s)]:.0f}x]"
                row.append(cell)
            print("| " + " | ".join(row) + " |")


def variants(d):
    """--variants DIR (or --ab DIR): cpu-scale.sh's variants and abscale
    steps. Per rank count and mode (tb2b, tz2, npb2b), per size: Open MPI's
    median where mpi_perf ran beside, then each variant's median iteration
    (the slowest rank, -a 3; the median over the passes)."""
    mpi = mpi_medians(d)
    g, names = collections.defaultdict(list), []
    for path in sorted(glob.glob(os.path.join(d, "*_n*.jsonl"))):
        m = re.search(r"([^/]+)_(tb2b|tz2|npb2b)_n(\d+)(?:_p\d+)?\.jsonl$", path)
        if not m:
            continue
        name, mode, n = m.group(1), m.group(2), int(m.group(3))
        if name not in names:
            names.append(name)
        for line in open(path):
            r = json.loads(line)
            if r.get("placement") == "out-of-place":
                g[(n, mode, name, r["size"])].append(r.get("median_us") or r["time_us"])
    for n in sorted({k[0] for k in g}):
        for mode in ("tb2b", "tz2", "npb2b"):
            sizes = sorted({k[3] for k in g if k[0] == n and k[1] == mode})
            if not sizes:
                continue
            print(f"\n## {n} ranks, {mode}: median iteration, us (the slowest rank, median of the passes)")
            print("| size (B) | Open MPI | " + " | ".join(names) + " |")
            print("|---" * (2 + len(names)) + "|")
            for s in sizes:
                cells = [f"{statistics.median(g[(n, mode, v, s)]):.1f}" if (n, mode, v, s) in g else "-" for v in names]
                m = f"{mpi[(n, s)]:.2f}" if (n, s) in mpi else "-"
                print(f"| {s} | {m} | " + " | ".join(cells) + " |")


def timing(d):
    """--timing DIR: cpu-scale.sh's timing step. Per rank count and size:
    the plain loop's time (time_us: the loop's mean, -a 3); under -I 1 the
    mean iteration (time_us: the same operations timed one by one) and the
    median (median_us); under --precision the median; each the median over
    the passes. ! marks a median off the plain loop's time by more than
    max(0.3 us, 5%), issue 41's bound; a mean close to the plain loop's
    with a median below it says the loop's operations are the same and the
    host stalled some of them."""
    g = collections.defaultdict(list)
    for path in glob.glob(os.path.join(d, "*_n*_p*.jsonl")):
        m = re.search(r"(plain|i1|prec)_n(\d+)_p\d+\.jsonl$", path)
        if not m:
            continue
        mode, n = m.group(1), int(m.group(2))
        for line in open(path):
            r = json.loads(line)
            if r.get("placement") == "out-of-place":
                g[(n, mode, "mean", r["size"])].append(r["time_us"])
                if r.get("median_us"):
                    g[(n, mode, "median", r["size"])].append(r["median_us"])
    cols = [("plain", "mean"), ("i1", "mean"), ("i1", "median"), ("prec", "median")]
    off = total = 0
    for n in sorted({k[0] for k in g}):
        print(f"\n## {n} ranks (-t {n}): us, the slowest rank, median of the passes; ! a median beyond max(0.3 us, 5%) of the plain loop")
        print("| size (B) | plain loop | -I 1 mean | -I 1 median | --precision median |")
        print("|---|---|---|---|---|")
        for s in sorted({k[3] for k in g if k[0] == n}):
            base = statistics.median(g[(n, "plain", "mean", s)]) if (n, "plain", "mean", s) in g else None
            cells = []
            for mode, stat in cols:
                v = g.get((n, mode, stat, s))
                if not v:
                    cells.append("-")
                    continue
                t = statistics.median(v)
                mark = ""
                if stat == "median" and base is not None:
                    total += 1
                    if abs(t - base) > max(0.3, 0.05 * base):
                        mark, off = "!", off + 1
                cells.append(f"{t:.2f}{mark}")
            print(f"| {s} | " + " | ".join(cells) + " |")
    print(f"\n{off} of {total} per-iteration medians beyond max(0.3 us, 5%) of the plain loop")


if len(sys.argv) > 2 and sys.argv[1] == "--timing":
    timing(sys.argv[2])
    sys.exit(0)
if len(sys.argv) > 2 and sys.argv[1] in ("--variants", "--ab"):
    variants(sys.argv[2])
    sys.exit(0)
if len(sys.argv) > 2 and sys.argv[1] == "--scale":
    scale(sys.argv[2])
    sys.exit(0)

out = sys.argv[1]
prefix = sys.argv[2] if len(sys.argv) > 2 else ""


def lines(path):
    """The lines of path, or of path.gz."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt")
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


lat = collections.defaultdict(list)
cur = None
have_lat = os.path.exists(f"{out}/latency.txt") or os.path.exists(f"{out}/latency.txt.gz")
for line in lines(f"{out}/latency.txt") if have_lat else []:
    m = re.match(r"=== (\S+) n=(\d+) pass=(\d+)", line)
    if m:
        cur = (m.group(1), int(m.group(2)))
        continue
    f = line.split()
    if cur and len(f) >= 6 and f[0].isdigit():
        lat[(cur[0], cur[1], int(f[0]))].append(float(f[2] if cur[0] == "mpi" else f[5]))
if lat:
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


def took(r):
    """A record's time: its median iteration when timed one by one."""
    return r.get("median_us") or r["time_us"]


def auto_vs_best(pattern):
    """Per rank count and size: auto's pick and time against the best forced."""
    paths = sorted(glob.glob(f"{out}/{prefix}{pattern}"), key=lambda p: int(re.search(r"_n(\d+)", os.path.basename(p)).group(1)))
    if not paths:
        return {}
    print()
    print("| ranks | size (B) | auto picks | auto (us) | best forced | best (us) | auto/best |")
    print("|---|---|---|---|---|---|---|")
    autos, within = {}, 0
    for path in paths:
        rows = collections.defaultdict(dict)
        for line in lines(path):
            r = json.loads(line)
            rows[(r["nranks"], r["size"])][(r["algorithm"], r["protocol"], r["channels"])] = r
        for (n, size), cfgs in sorted(rows.items()):
            auto = cfgs.get(("auto", "auto", 0))
            forced = {k: v for k, v in cfgs.items() if k[0] != "auto"}
            if not auto or not forced:
                continue
            autos[(n, size)] = auto
            bk = min(forced, key=lambda k: took(forced[k]))
            b = took(forced[bk])
            within += took(auto) <= 1.1 * b
            pick = f'{auto["chosen_algo"]}/{auto["chosen_proto"]}/{auto["chosen_channels"]}'
            print(f'| {n} | {size} | {pick} | {took(auto):.2f} | {bk[0]}/{bk[1]}/{bk[2] or "auto"} | {b:.2f} | {took(auto)/b:.2f} |')
    print(f"\nauto within 10% of the best forced configuration at {within} of {len(autos)} points")
    return autos


auto_vs_best("small_n*.jsonl*")
large = auto_vs_best("large_n*.jsonl*") or auto_vs_best("sweep_n*.jsonl*")
# Open MPI's large sizes from sweep.txt: "=== mpi large n=N" then mpi_perf rows.
mpi, cur = {}, None
sweep = f"{out}/sweep.txt"
for line in lines(sweep) if (os.path.exists(sweep) or os.path.exists(sweep + ".gz")) else []:
    m = re.match(r"=== mpi large n=(\d+)", line)
    if m or line.startswith("==="):
        cur = int(m.group(1)) if m else None
        continue
    f = line.split()
    if cur and len(f) >= 6 and f[0].isdigit():
        mpi[(cur, int(f[0]))] = float(f[5])  # busbw_med
if mpi and large:
    print()
    print("| ranks | size (B) | Open MPI busBw (GB/s) | gccl auto busBw (GB/s) | gccl/Open MPI |")
    print("|---|---|---|---|---|")
    for (n, size), a in sorted(large.items()):
        if (n, size) in mpi and size >= 1 << 20:
            print(f'| {n} | {size} | {mpi[(n, size)]:.2f} | {a["busbw_gbps"]:.2f} | {a["busbw_gbps"]/mpi[(n, size)]:.2f} |')
