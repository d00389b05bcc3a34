#!/usr/bin/env python3
"""tables.py: the README's tables from the short runs' JSON reports.

Usage: python3 tables.py a1.json b1.json a2.json b2.json (a: default boot,
b: TSC boot; the file name's first letter says which). Per run: the
paired ratio rdmaperf/perftest and its 95 % interval, as the bench
computes them. Pooled per boot: every pair of the runs of that boot,
the same t-interval on the mean of the logs (a run's repetitions are
pairs of the same kind, so pooling them is pooling pairs). B/A: the ratio
of the pooled geometric means, with Welch's 95 % interval on the
difference of the mean logs. Then both tools' medians per boot, rdmaperf's
own counters of its loop (getrusage: context switches, CPU seconds) and
perftest's r^2 glitches.
"""
import json, math, statistics, sys

T = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
     2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
     2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]

def tq(df):
    if df < 1: return math.inf
    if df <= 30: return T[int(df) - 1]
    return 2.042 if df < 60 else 2.000 if df < 120 else 1.980

def pairs(c):
    cv = {s['rep']: s['value'] for s in c['c'] if s['value'] > 0}
    return [math.log(s['value'] / cv[s['rep']]) for s in c['rdmago'] if s['rep'] in cv and s['value'] > 0]

def ci(logs):
    n = len(logs); m = statistics.fmean(logs)
    if n < 2: return n, math.exp(m), math.nan, math.nan
    h = tq(n - 1) * statistics.stdev(logs) / math.sqrt(n)
    return n, math.exp(m), math.exp(m - h), math.exp(m + h)

def welch(a, b):
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    h = tq(int(df)) * math.sqrt(va + vb)
    d = mb - ma
    return math.exp(d), math.exp(d - h), math.exp(d + h)

runs = []
for f in sys.argv[1:]:
    name = f.split('/')[-1].split('.')[0]
    runs.append((name, json.load(open(f))))
cases = [(c['test'], c['bytes']) for c in runs[0][1]['cases']]
def case(r, k): return next(c for c in r['cases'] if (c['test'], c['bytes']) == k)
def size(b): return f"{b // 1024} KiB" if b >= 1024 else f"{b} B"

print("Per run: rdmaperf/perftest [95 % interval] (pairs)\n")
print("| case | goal | " + " | ".join(n for n, _ in runs) + " |")
print("|---|---|" + "---|" * len(runs))
for k in cases:
    row = []
    for _, r in runs:
        s = case(r, k)['stats']
        row.append(f"{s['ratio']:.3f} [{s['ci95_lo']:.3f}–{s['ci95_hi']:.3f}] ({s['pairs']})")
    print(f"| {k[0]} {size(k[1])} | {case(runs[0][1], k)['stats'].get('goal', '')} | " + " | ".join(row) + " |")

print("\nPooled per boot (a: default, b: TSC), and the change b/a of the ratio\n")
print("| case | a: ratio [95 %] (pairs) | b: ratio [95 %] (pairs) | b/a [95 %] |")
print("|---|---|---|---|")
for k in cases:
    la = [x for n, r in runs if n[0] == 'a' for x in pairs(case(r, k))]
    lb = [x for n, r in runs if n[0] == 'b' for x in pairs(case(r, k))]
    na, ra, loa, hia = ci(la); nb, rb, lob, hib = ci(lb)
    d, dlo, dhi = welch(la, lb)
    print(f"| {k[0]} {size(k[1])} | {ra:.3f} [{loa:.3f}–{hia:.3f}] ({na}) | {rb:.3f} [{lob:.3f}–{hib:.3f}] ({nb}) | {d:.3f} [{dlo:.3f}–{dhi:.3f}] |")

print("\nMedians per boot over all repetitions (BW MB/s, latency µs): rdmaperf, perftest\n")
print("| case | a: rdmaperf | a: perftest | b: rdmaperf | b: perftest | b/a rdmaperf | b/a perftest |")
print("|---|---|---|---|---|---|---|")
for k in cases:
    v = {}
    for boot in 'ab':
        for tool in ('rdmago', 'c'):
            v[boot, tool] = statistics.median([s['value'] for n, r in runs if n[0] == boot for s in case(r, k)[tool]])
    print(f"| {k[0]} {size(k[1])} | {v['a','rdmago']:.2f} | {v['a','c']:.2f} | {v['b','rdmago']:.2f} | {v['b','c']:.2f} | {v['b','rdmago']/v['a','rdmago']:.3f} | {v['b','c']/v['a','c']:.3f} |")

print("\nrdmaperf's own counters of its measured loop, medians per boot (vcsw, ivcsw: context switches of all its threads; CPU seconds)\n")
print("| case | iterations | a: vcsw | a: ivcsw | a: user+sys s | b: vcsw | b: ivcsw | b: user+sys s |")
print("|---|---|---|---|---|---|---|---|")
for k in cases:
    row = []
    for boot in 'ab':
        cs = [s['rdmaperf']['counters'] for n, r in runs if n[0] == boot for s in case(r, k)['rdmago'] if s.get('rdmaperf') and s['rdmaperf'].get('counters')]
        if not cs:
            row += ['–'] * 3; continue
        row += [f"{statistics.median(c.get('vcsw', 0) for c in cs):.0f}", f"{statistics.median(c.get('ivcsw', 0) for c in cs):.0f}",
                f"{statistics.median(c.get('user_sec', 0) + c.get('sys_sec', 0) for c in cs):.2f}"]
    print(f"| {k[0]} {size(k[1])} | {case(runs[0][1], k)['iterations']} | " + " | ".join(row) + " |")

print("\nperftest r^2 glitches (runs repeated; unresolved ones lost a pair), clock source, elapsed\n")
print("| run | clock source | glitches (tries) | unresolved | elapsed s |")
print("|---|---|---|---|---|")
for n, r in runs:
    g = r.get('reference_glitches') or []
    src = ", ".join(sorted(set((r.get('clocksource') or {}).values()))) or "?"
    print(f"| {n} | {src} | {len(g)} ({sum(x['tries'] for x in g)}) | {sum(1 for x in g if not x.get('resolved'))} | {r['elapsed_sec']:.0f} |")
