#!/usr/bin/env python3
"""Medians (and ranges) of the lines c.sh prints: 'passN build label... size:oop/inplace ...'.
usage: summary.py FILE"""
import sys, statistics, collections
vals = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    f = line.split()
    if not f or not f[0].startswith("pass"):
        continue
    build, label = f[1], " ".join(x for x in f[2:] if ":" not in x)
    for tok in f[2:]:
        if ":" not in tok:
            continue
        size, t = tok.split(":")
        o, i = t.split("/")
        key = (label, int(size))
        if key not in order:
            order.append(key)
        vals[(build, key)] += [float(o), float(i)]
print("| config | size (B) | old: median (min-max) us | new: median (min-max) us | old / new |")
print("|---|---:|---:|---:|---:|")
for key in order:
    o, n = vals[("old", key)], vals[("new", key)]
    if not o or not n:
        continue
    mo, mn = statistics.median(o), statistics.median(n)
    print(f"| {key[0]} | {key[1]} | {mo:.1f} ({min(o):.1f}-{max(o):.1f}) | {mn:.1f} ({min(n):.1f}-{max(n):.1f}) | {mo/mn:.2f}x |")
