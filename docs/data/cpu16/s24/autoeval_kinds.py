#!/usr/bin/env python3
"""Auto against the best forced configuration measured beside it, counted per kind of sweep.

usage: autoeval_kinds.py DIR LABEL [LABEL...]
Reads DIR/LABEL<round>_<kind>_n<ranks>.jsonl[.gz] as ../s23/autoeval.py does and prints, per label
and kind, how many sizes have auto within 10% of the fastest forced configuration (median of the
per-round ratios) and the worst median ratio."""
import collections, glob, gzip, json, os, re, statistics, sys
d=sys.argv[1]
for label in sys.argv[2:]:
    ratios=collections.defaultdict(list)
    for f in sorted(glob.glob(f"{d}/{label}*_n*.jsonl*")):
        m=re.match(rf"{re.escape(label)}(\d*)_(\w+)_n(\d+)\.jsonl", os.path.basename(f))
        if not m: continue
        kind,n=m.group(2),int(m.group(3))
        by=collections.defaultdict(dict)
        for line in (gzip.open(f,"rt") if f.endswith(".gz") else open(f)):
            r=json.loads(line); by[r['size']][f"{r['algorithm']}/{r['protocol']}/{r['channels']}"]=r['median_us']
        for s,c in by.items():
            if s==0: continue
            a=c.pop('auto/auto/0'); ratios[(kind,n,s)].append(a/min(c.values()))
    cnt=collections.Counter(); tot=collections.Counter(); worst=collections.defaultdict(float)
    for (kind,n,s),v in ratios.items():
        m=statistics.median(v); tot[kind]+=1; cnt[kind]+= m<=1.10; worst[kind]=max(worst[kind],m)
    print(label, ' | '.join(f"{k}: {cnt[k]}/{tot[k]} (worst {worst[k]:.2f})" for k in sorted(tot)))
