#!/usr/bin/env python3
"""Median tables of a scripts/gpu-compare.sh run.

    python3 scripts/gpu-compare-summary.py DIR      (DIR: the unpacked archive)

For every step and collective: each variant's out-of-place time per size,
the median over the passes and, in brackets, the passes' spread (max - min);
then each variant against its reference (gccl and ntplugin against
nccl-tests, the other gccl variants against gccl): the gap in us and %.
A gap is flagged '!' beyond the issue's bound (gccl - nccl-tests: max(1 us,
3%); plugin - gccl: max(0.5 us, 1%)) and '~' where a side's own spread is
larger than the gap (the passes do not tell the two apart). In place: one
line per collective. Then NCCL's choices from the logs step, compared
between nccl-tests, gccl and gccl with the plugin. Standard library only.
"""
import collections
import glob
import os
import re
import statistics
import sys

NAME = re.compile(r"^(small|large|graph|cputime|g1|logs|np|hosts)_(.+)_([A-Za-z0-9]+)_p(\d+)\.txt$")
TUNING = re.compile(r"(\w+): +(\d+) Bytes -> Algo (\w+) proto (\w+)(?: channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})?")
# the rest against gccl
REF = {"gccl": "nt", "ntplugin": "nt", "ntpin": "nt", "gcclpin": "ntpin",
       "gcclnp": "ntmpi", "gcclmpi": "ntmpi", "gcclmpig": "ntmpi", "gcclnpunbound": "ntmpi", "gcclnpold": "ntmpi", "gcclhosts": "nthosts", "gcclhostsmpi": "nthosts"}
BOUND = {"gccl": (1.0, 0.03), "gcclpin": (1.0, 0.03), "plugin": (0.5, 0.01), "ntplugin": (0.5, 0.01),
         "gcclnp": (1.0, 0.03), "gcclmpi": (1.0, 0.03), "gcclhosts": (1.0, 0.03), "gcclhostsmpi": (1.0, 0.03)}
ORDER = ["nt", "gccl", "plugin", "ntplugin", "ntpin", "gcclpin", "cudamalloc", "purego",
         "ntmpi", "gcclnp", "gcclmpi", "gcclmpig", "gcclnpunbound", "gcclnpold", "nthosts", "gcclhosts", "gcclhostsmpi"]


def rows(path):
    """{size: (oop_us, ip_us)} of one run's table, and its exit line."""
    out, rc = {}, "?"
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("### rc="):
                rc = line.strip()[7:]
            if line.startswith("#"):
                continue
            p = line.split()
            if len(p) < 13 or not p[0].isdigit():
                continue
            try:
                out[int(p[0])] = (float(p[5]), float(p[9]) if p[9] not in ("-", "N/A") else None)
            except ValueError:
                continue
    return out, rc


def load(d):
    """data[step][coll][variant] = list over passes of {size: (oop, ip)}."""
    data = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
    bad = []
    for path in sorted(glob.glob(os.path.join(d, "raw", "*.txt"))):
        m = NAME.match(os.path.basename(path))
        if not m:
            continue
        step, coll, var, _ = m.groups()
        r, rc = rows(path)
        if rc != "0":
            bad.append(f"{os.path.basename(path)}: rc={rc}")
        if r:
            data[step][coll][var].append(r)
    return data, bad


def med(runs, size, k):
    v = [r[size][k] for r in runs if size in r and r[size][k] is not None]
    if not v:
        return None, None
    return statistics.median(v), max(v) - min(v)


def fmt(x, w=8, p=2):
    return " " * w if x is None else f"{x:{w}.{p}f}"


def gap(var, a, b, sa, sb):
    """The gap a - b of variant var against its reference, with flags."""
    if a is None or b is None:
        return "      -        "
    d = a - b
    pct = d / b * 100 if b else 0.0
    flag = " "
    absb, relb = BOUND.get(var, (None, None))
    if absb is not None and abs(d) > max(absb, relb * b):
        flag = "!"
    if max(sa or 0, sb or 0) > abs(d):
        flag += "~"
    return f"{d:+7.2f} {pct:+6.1f}%{flag:2}"


VERDICTS = []  # one line per (step, collective, gap), printed again at the end


def verdict(line):
    print("   " + line)
    VERDICTS.append(line)


def table(step, coll, byvar):
    vars_ = sorted(byvar, key=lambda v: (ORDER.index(v) if v in ORDER else 99, v))
    sizes = sorted({s for runs in byvar.values() for r in runs for s in r})
    npass = {v: len(byvar[v]) for v in vars_}
    print(f"\n## {step} {coll}: out-of-place us, median over passes (spread); passes {npass}")
    head = f"{'size':>10} |" + "".join(f" {v:>15} |" for v in vars_)
    gaps = [v for v in vars_ if v not in ("nt", "ntmpi", "nthosts") and (REF.get(v, "gccl") in byvar)]
    head += "".join(f" {v + '-' + REF.get(v, 'gccl'):>17} |" for v in gaps)
    print(head)
    flagged = collections.Counter()
    for s in sizes:
        line = f"{s:>10} |"
        m = {v: med(byvar[v], s, 0) for v in vars_}
        for v in vars_:
            x, sp = m[v]
            line += f" {fmt(x)} ({fmt(sp, 4, 1).strip():>4}) |"
        for v in gaps:
            ref = REF.get(v, "gccl")
            g = gap(v, m[v][0], m[ref][0], m[v][1], m[ref][1])
            if "!" in g:
                flagged[v] += 1
            line += f" {g:>17} |"
        print(line)
    # Out of place, then in place: the gaps' range and how many sizes are
    # beyond the bound (and beyond both sides' spread).
    for v in gaps:
        ref = REF.get(v, "gccl")
        ds = [med(byvar[v], s, 0)[0] - med(byvar[ref], s, 0)[0] for s in sizes
              if med(byvar[v], s, 0)[0] is not None and med(byvar[ref], s, 0)[0] is not None]
        if ds:
            verdict(f"{step} {coll} out of place {v}-{ref}: {min(ds):+.2f} .. {max(ds):+.2f} us; flagged '!' at {flagged[v]} of {len(ds)} sizes")
    for v in gaps:
        ref = REF.get(v, "gccl")
        ds, over = [], 0
        for s in sizes:
            a, sa = med(byvar[v], s, 1)
            b, sb = med(byvar[ref], s, 1)
            if a is None or b is None:
                continue
            ds.append(a - b)
            absb, relb = BOUND.get(v, (None, None))
            if absb is not None and abs(a - b) > max(absb, relb * b) and max(sa, sb) <= abs(a - b):
                over += 1
        if ds:
            verdict(f"{step} {coll} in place {v}-{ref}: {min(ds):+.2f} .. {max(ds):+.2f} us; beyond the bound and the spread at {over} of {len(ds)} sizes")


def choices(d):
    """NCCL's choices per collective and variant, from the logs step."""
    logs = collections.defaultdict(dict)
    notes = collections.defaultdict(lambda: collections.defaultdict(set))
    for path in glob.glob(os.path.join(d, "logs", "*.log")):
        base = os.path.basename(path)
        m = re.match(r"^(.+)_([A-Za-z0-9]+)\.\d+\.log$", base)
        if not m:
            continue
        coll, var = m.groups()
        seen = logs[coll].setdefault(var, set())
        with open(path, errors="replace") as f:
            for line in f:
                t = TUNING.search(line)
                if t:
                    nch = int(t.group(6)) - int(t.group(5)) + 1 if t.group(5) else 0
                    seen.add((t.group(1), int(t.group(2)), t.group(3), t.group(4), nch))
                elif any(k in line for k in ("coll channels", "set by environment", "TUNER", "tuner", "CC Off", "P2P/")):
                    # strip the host/pid prefix and addresses
                    notes[coll][var].add(re.sub(r"0x[0-9a-f]+", "0x..", line.split("NCCL INFO", 1)[-1].strip()))
    if not logs:
        return
    print("\n## NCCL's choices (logs step: TUNING lines, rank 0 of each communicator)")
    for coll in sorted(logs):
        by = logs[coll]
        refvar = "nt" if "nt" in by else "nthosts"
        ref = by.get(refvar, set())
        for var in sorted(by):
            if var == refvar:
                continue
            extra, missing = sorted(by[var] - ref), sorted(ref - by[var])
            same = "the same as nccl-tests'" if not extra and not missing else f"{len(extra)} not in nccl-tests', {len(missing)} of nccl-tests' missing"
            print(f"  {coll} {var}: {len(by[var])} distinct choices, {same}")
            for e in extra[:6]:
                print(f"      {var} only: {e}")
            for e in missing[:6]:
                print(f"      nccl-tests only: {e}")
        for var in sorted(notes[coll]):
            other = set().union(*(notes[coll][v] for v in notes[coll] if v != var)) if len(notes[coll]) > 1 else set()
            for n in sorted(notes[coll][var] - other)[:5]:
                print(f"      {var} init/env only: {n[:150]}")


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    data, bad = load(d)
    for step in ["small", "large", "cputime", "graph", "g1", "np", "hosts"]:
        for coll in sorted(data.get(step, {})):
            table(step, coll, data[step][coll])
    choices(d)
    if VERDICTS:
        print("\n## Verdicts (as after each table)")
        for v in VERDICTS:
            print("  " + v)
    if bad:
        print("\n## runs that did not exit 0")
        for b in bad:
            print("  " + b)


if __name__ == "__main__":
    main()
