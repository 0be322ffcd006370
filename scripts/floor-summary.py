#!/usr/bin/env python3
"""Summarise cpu-scale.sh's floor step: per rank count and size, the median
time (us) of Open MPI and of each gccl variant over every pass and loop.

    python3 scripts/floor-summary.py floor.txt[.gz]
"""
import gzip
import re
import statistics
import sys
from collections import defaultdict


def main(path):
    opener = gzip.open if path.endswith(".gz") else open
    times = defaultdict(list)  # (who, n, size) -> [us]
    who = n = None
    with opener(path, "rt") as f:
        for line in f:
            m = re.match(r"=== floor (\S+) n=(\d+) pass=\d+", line)
            if m:
                who, n = m.group(1), int(m.group(2))
                continue
            if who is None or line.startswith("#"):
                continue
            cols = line.split()
            if who == "mpi" and len(cols) >= 7 and cols[0].isdigit():
                times[(who, n, int(cols[0]))].append(float(cols[2]))
            elif who != "mpi" and len(cols) >= 9 and cols[0].isdigit() and cols[2] == "float":
                times[(who, n, int(cols[0]))].append(float(cols[5]))
    variants = [w for w in ("mpi", "base", "new", "nopf", "np", "share") if any(k[0] == w for k in times)]
    ns = sorted({k[1] for k in times})
    sizes = sorted({k[2] for k in times if k[0] != "mpi"})
    print("| ranks | size (B) | " + " | ".join(variants) + " |")
    print("|---:|---:|" + "---:|" * len(variants))
    for n in ns:
        for s in sizes:
            row = []
            for w in variants:
                v = times.get((w, n, s))
                row.append("%.2f" % statistics.median(v) if v else "-")
            print("| %d | %d | %s |" % (n, s, " | ".join(row)))


if __name__ == "__main__":
    main(sys.argv[1])
