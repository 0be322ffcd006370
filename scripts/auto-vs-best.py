#!/usr/bin/env python3
"""Auto against the best forced configuration, measured side by side.

Reads perf's JSONL records (--out) of runs whose --configs held "auto" and
forced configurations (ideally --interleave --precision, so every
configuration of a point was timed in the same stretch), and prints per
rank count and size auto's pick and median time, the fastest forced
configuration and its median, and their ratio; then how many points auto
was within 10% of the best.

    python3 scripts/auto-vs-best.py FILE.jsonl[.gz] ...
"""
import collections
import gzip
import json
import sys


def main(paths):
    rows = collections.defaultdict(dict)  # (ranks, size) -> config -> (median us, pick)
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            for line in f:
                r = json.loads(line)
                if r["algorithm"] == "auto":
                    cfg = "auto"
                else:
                    cfg = f"{r['algorithm']}/{r['protocol']}/{r['channels'] or 'auto'}"
                pick = f"{r.get('chosen_algo')}/{r.get('chosen_proto')}/{r.get('chosen_channels')}"
                rows[(r["nranks"], r["size"])][cfg] = (r["median_us"], pick)
    print("| ranks | size (B) | auto picks | auto (us) | best forced | best (us) | auto/best |")
    print("|---:|---:|---|---:|---|---:|---:|")
    within = total = 0
    for key in sorted(rows):
        d = rows[key]
        forced = {k: v[0] for k, v in d.items() if k != "auto"}
        if "auto" not in d or not forced:
            continue
        auto, pick = d["auto"]
        best = min(forced, key=forced.get)
        ratio = auto / forced[best]
        total += 1
        within += ratio <= 1.10
        print(f"| {key[0]} | {key[1]} | {pick} | {auto:.2f} | {best} | {forced[best]:.2f} | {ratio:.2f} |")
    print(f"\nauto within 10% of the best forced configuration at {within} of {total} points")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
