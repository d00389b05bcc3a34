#!/usr/bin/env python3
"""Reads loopwin.sh's perf script dumps (loopwin-N-TOOL.txt, TOOL c for
perftest, g for rdmaperf) and prints, per run, the loop's window (the
client's first to last sample in the kernel's ib_uverbs_post_send), its
samples per command (client = every thread of the client's process; swapper
= idle), the client's samples in the kernel and in user space, and the top
symbols outside the client; then, over all runs, the client's symbols whose
mean sample count differs most between the two tools.
  python3 docs/bench/icount-6.1-2026-11-28/loopwin.py out/inv/loopwin-*.txt"""
import collections, re, sys

LINE = re.compile(r'^\s*(\S+)\s+(\d+)/(\d+)\s+([\d.]+):\s*([0-9a-f]+)\s+(.*)$')
KERNEL = 0xffff000000000000
per_tool = collections.defaultdict(list)  # tool -> [Counter of the client's symbols in the window]

for path in sys.argv[1:]:
    rows = []
    for ln in open(path, errors='replace'):
        m = LINE.match(ln)
        if m:
            comm, pid, tid, t, ip, sym = m.groups()
            rows.append((comm, int(pid), int(tid), float(t), int(ip, 16), sym.strip() or '?'))
    tool = path.rsplit('-', 1)[-1].split('.')[0]
    posts = collections.Counter(r[1] for r in rows if r[5] == 'ib_uverbs_post_send' and r[0] != 'perf')
    if not posts:
        print(f'{path}: no ib_uverbs_post_send samples')
        continue
    cpid = posts.most_common(1)[0][0]
    ts = [r[3] for r in rows if r[1] == cpid and r[5] == 'ib_uverbs_post_send']
    lo, hi = min(ts), max(ts)
    win = [r for r in rows if lo <= r[3] <= hi]
    mine = [r for r in win if r[1] == cpid]
    kern = sum(1 for r in mine if r[4] >= KERNEL)
    print(f'{path}: client pid {cpid}, loop window {hi - lo:.4f} s, {len(win)} samples; '
          f'client {len(mine)} (kernel {kern}, user {len(mine) - kern})')
    who = collections.Counter('client' if r[1] == cpid else (re.sub(r'[0-9/:]+.*$', '', r[0]) or r[0]) for r in win)
    for w, n in who.most_common():
        print(f'  {w:22s} {n:6d}')
    print('  client threads (tid: samples):', ', '.join(f'{t}: {n}' for t, n in collections.Counter(r[2] for r in mine).most_common()))
    print('  not the client, top symbols:', ', '.join(f'{n} {o}' for o, n in collections.Counter(f'{r[0]}:{r[5]}' for r in win if r[1] != cpid).most_common(6)))
    per_tool[tool].append(collections.Counter(r[5] for r in mine))

if set(per_tool) >= {'c', 'g'}:
    mean = {}
    for t, cs in per_tool.items():
        total = collections.Counter()
        for c in cs:
            total.update(c)
        mean[t] = collections.Counter({s: n / len(cs) for s, n in total.items()})
    syms = set(mean['c']) | set(mean['g'])
    diff = sorted(((mean['g'][s] - mean['c'][s], s) for s in syms), reverse=True)
    print('client symbols, mean samples per run, most more under rdmaperf (g) than perftest (c):')
    for d, s in diff[:20]:
        print(f'  {d:+8.1f}  {s}  (c {mean["c"][s]:.1f}, g {mean["g"][s]:.1f})')
    print('... most more under perftest:')
    for d, s in diff[-12:][::-1]:
        print(f'  {d:+8.1f}  {s}  (c {mean["c"][s]:.1f}, g {mean["g"][s]:.1f})')
