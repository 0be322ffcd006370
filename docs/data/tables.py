#!/usr/bin/env python3
"""Builds the tables of docs/PERFORMANCE.md from docs/data/*.txt (medians over passes)."""
import re, statistics, sys, os
d = os.path.dirname(os.path.abspath(__file__))

def bench(path):
    rows = {}
    for line in open(os.path.join(d, path)):
        if not line.startswith('BenchmarkAllReduce/'):
            continue
        f = line.split()
        name = re.sub(r'-\d+$', '', f[0].split('/', 1)[1])
        vals = {f[i + 1]: float(f[i]) for i in range(2, len(f) - 1) if f[i + 1] in ('busBW_GB/s', 'copy_GB/s', 'us/op')}
        rows.setdefault(name, []).append(vals)
    return {k: {m: statistics.median(r[m] for r in v) for m in v[0]} | {'n': len(v)} for k, v in rows.items()}

def mpi(path):
    rows = {}
    for line in open(os.path.join(d, path)):
        if line.startswith('#') or not line.strip():
            continue
        f = line.split()
        rows.setdefault(int(f[0]), []).append((float(f[2]), float(f[5])))
    return {k: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v), len(v)) for k, v in rows.items()}

sizes = {'8B': 8, '512B': 512, '32K': 32 << 10, '256K': 256 << 10, '2M': 2 << 20, '32M': 32 << 20, '64M': 64 << 20}
b = bench('bench_head.txt')
for ranks in (2, 4):
    m = mpi(f'mpi_{ranks}.txt')
    print(f'\n#### {ranks} ranks: busBw GB/s (time per op in us below 32 KiB), median of passes\n')
    print('| size | LL nch=1 | LL nch=2 | LL128 nch=1 | LL128 nch=2 | Simple nch=1 | Simple nch=2 | OpenMPI | copy() GB/s |')
    print('|---|---|---|---|---|---|---|---|---|')
    for s, n in sizes.items():
        cells = []
        copyv = ''
        for p in ('LL', 'LL128', 'Simple'):
            for ch in (1, 2):
                r = b.get(f'ranks={ranks}/proto={p}/nch={ch}/size={s}')
                if not r:
                    cells.append('-'); continue
                cells.append(f"{r['us/op']:.2f} us" if n < 32 << 10 else f"{r['busBW_GB/s']:.2f}")
                copyv = f"{r['copy_GB/s']:.1f}"
        mv = m.get(n)
        mcell = '-' if not mv else (f'{mv[0]:.2f} us' if n < 32 << 10 else f'{mv[1]:.2f}')
        print(f"| {s} | " + ' | '.join(cells) + f' | {mcell} | {copyv} |')
    print(f"\n(gccl: {max(v['n'] for v in b.values())} passes; OpenMPI: {max(v[2] for v in m.values())} passes)")
