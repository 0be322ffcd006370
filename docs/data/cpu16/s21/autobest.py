# auto against the best forced configuration per size, from perf's --out JSON lines (median_us)
# usage: python3 autobest.py FILE.jsonl[.gz]...
import json,collections,sys,gzip
for path in sys.argv[1:]:
    f=gzip.open(path,'rt') if path.endswith('.gz') else open(path)
    rows=[json.loads(l) for l in f]
    by=collections.defaultdict(dict); chosen={}
    n=None
    for r in rows:
        if 'size' not in r: continue
        n=r['nranks']
        key=f"{r['algorithm']}/{r['protocol']}/{r['channels']}"
        by[r['size']].setdefault(key,[]).append(r['median_us'])
        if r['algorithm']=='auto': chosen[r['size']]=f"{r.get('chosen_algo')}/{r.get('chosen_proto')}/{r.get('chosen_channels')}"
    ok=0
    for size in sorted(by):
        d={k:sorted(v)[len(v)//2] for k,v in by[size].items()}
        auto=d.pop('auto/auto/0'); best=min(d,key=d.get); ratio=auto/d[best]; ok+=ratio<=1.10
        others=" ".join(f"{k.split('/',1)[1]}={v:.0f}" for k,v in sorted(d.items()))
        print(n, size, f"auto {auto:.1f} ({chosen[size]}) best {best} {d[best]:.1f} ratio {ratio:.2f}", "" if ratio<=1.1 else "<<", "|", others)
    print(n, "within 10%:", ok, "/", len(by))
