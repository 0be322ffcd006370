#!/usr/bin/env python3
"""Auto against the best forced configuration measured beside it (perf --interleave).

usage: autoeval.py DIR LABEL [LABEL...]
Reads DIR/LABEL<round>_<kind>_n<ranks>.jsonl[.gz] (e.g. Dfit1_small_n8.jsonl.gz), compares each
record of the auto configuration with the fastest forced configuration of the same size (by
median_us), and prints per label the count within 10% in each round, the count whose median ratio
over the rounds is within 10%, and every size whose median is not."""
import collections, glob, gzip, json, os, re, statistics, sys

d = sys.argv[1]
for label in sys.argv[2:]:
    ratios, per_round, total = collections.defaultdict(list), collections.Counter(), collections.Counter()
    for f in sorted(glob.glob(f"{d}/{label}*_n*.jsonl*")):
        m = re.match(rf"{re.escape(label)}(\d*)_(\w+)_n(\d+)\.jsonl", os.path.basename(f))
        if not m:
            continue
        rnd, kind, n = m.group(1) or "1", m.group(2), int(m.group(3))
        by = collections.defaultdict(dict)
        for line in (gzip.open(f, "rt") if f.endswith(".gz") else open(f)):
            r = json.loads(line)
            cfg = f"{r['algorithm']}/{r['protocol']}/{r['channels']}"
            by[r["size"]][cfg] = (r["median_us"], f"{r.get('chosen_algo')}/{r.get('chosen_proto')}/{r.get('chosen_channels')}")
        for size, cfgs in by.items():
            if size == 0:
                continue  # an allgather of fewer bytes than ranks: nothing moves
            auto = cfgs.pop("auto/auto/0")
            best = min(cfgs.items(), key=lambda kv: kv[1][0])
            ratio = auto[0] / best[1][0]
            ratios[(kind, n, size)].append((ratio, auto[1], best[0]))
            total[rnd] += 1
            per_round[rnd] += ratio <= 1.10
    print(label, " ".join(f"round {r}: {per_round[r]}/{total[r]}" for r in sorted(total)))
    within, misses = 0, []
    for k in sorted(ratios):
        rs = sorted(x[0] for x in ratios[k])
        med = statistics.median(rs)
        within += med <= 1.10
        if med > 1.10:
            same = " (the same configuration)" if ratios[k][0][1] == ratios[k][0][2] else ""
            misses.append(f"  {k[0]} n{k[1]} {k[2]} B: auto/best {med:.2f} (rounds {' '.join(f'{x:.2f}' for x in rs)}), auto {ratios[k][0][1]}, best {ratios[k][0][2]}{same}")
    print(f"  median over rounds within 10%: {within}/{len(ratios)}")
    print("\n".join(misses))
