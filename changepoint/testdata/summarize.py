#!/usr/bin/env python3
"""Summarise repeated perf runs into the per-key series the tests replay.

usage: summarize.py OUT.json NOTE NAME=GLOB [NAME=GLOB ...]

Each GLOB names one JSONL file per run (perf's --out), in run order. For each
NAME (a set of runs: one binary, one configuration), per key (size and
placement) the series of the runs' median_us and min_us, and per run its
ref_copy_gbps, rounded to 4 significant digits. A run of several cycles (-N)
has several records of a key: its median_us is the median of theirs, its
min_us the least, its p5_us the 5th percentile of their per-iteration times
pooled, each record's thinned to 100 as a history keeps them.
"""
import glob
import json
import statistics
import sys


def sig4(x):
    return float(f"{x:.4g}")


def thin(v, n=100):
    """results.Thin: n evenly spaced order statistics, as a history keeps them."""
    s = sorted(x for x in v if x > 0)
    if len(s) <= n:
        return s
    return [s[(2 * i + 1) * len(s) // (2 * n)] for i in range(n)]


def label(size):
    for unit, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def summarise(name, pattern):
    files = sorted(glob.glob(pattern))
    if not files:
        sys.exit(f"{pattern}: no files")
    refs, keys = [], {}
    for f in files:
        recs = [json.loads(line) for line in open(f) if line.strip()]
        refs.append(sig4(statistics.median(r["ref_copy_gbps"] for r in recs)))
        run = {}
        for r in recs:
            run.setdefault((r["size"], r["placement"]), []).append(r)
        for k, rs in run.items():
            r = rs[0]
            s = keys.setdefault(k, {"key": f'{r["collective"]} {label(r["size"])} {r["placement"]}', "median_us": [], "min_us": [], "p5_us": []})
            s["median_us"].append(sig4(statistics.median(r["median_us"] for r in rs)))
            s["min_us"].append(sig4(min(r["min_us"] for r in rs)))
            pooled = sorted(x for r in rs for x in thin(r["iter_times_us"]))
            s["p5_us"].append(sig4(pooled[len(pooled) // 20]))
    for k, s in keys.items():
        if len(s["median_us"]) != len(files):
            sys.exit(f"{name}: key {s['key']} has {len(s['median_us'])} runs of {len(files)}")
    return {"name": name, "runs": len(files), "ref_copy_gbps": refs, "series": [keys[k] for k in sorted(keys)]}


def main():
    out, note, sets = sys.argv[1], sys.argv[2], sys.argv[3:]
    doc = {"note": note, "sets": [summarise(*s.split("=", 1)) for s in sets]}
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


main()
