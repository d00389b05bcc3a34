"""Guest instructions per round trip by where perf's samples fell, from
rtwork-diff.sh's log: each run's samples by command and DSO (perf itself
left out), kernel or user space, at 5,000 round trips minus the same kind's
run at 1,000 (in order), times 100,000 instructions per sample, over the
round trips between them."""
import collections
import re
import sys

runs, iters = [], None
for line in open(sys.argv[1]):
    m = re.search(r'##### I=(\d+)', line)
    if m:
        iters = int(m.group(1))
        continue
    m = re.search(r'=== (\w):', line)
    if m:
        runs.append({'k': m.group(1), 'I': iters, 'n': collections.Counter(), 'done': False})
        continue
    if not runs or runs[-1]['done']:
        continue
    if '--- top symbols' in line:
        runs[-1]['done'] = True
        continue
    m = re.match(r'\s+[\d.]+%\s+(\d+)\s+(\S+)\s+(\S+)\s*$', line)
    if m and m.group(2) not in ('perf-exec', 'perf', 'env'):
        where = 'kernel' if 'kernel' in m.group(3) else 'user'
        runs[-1]['n'][where] += int(m.group(1))
for k, name in (('c', 'rstream'), ('g', 'Go')):
    lo = [r for r in runs if r['k'] == k and r['I'] == 1000]
    hi = [r for r in runs if r['k'] == k and r['I'] == 5000]
    for a, b in zip(lo, hi):
        d = {w: (b['n'][w] - a['n'][w]) * 100000 / (b['I'] - a['I']) for w in ('kernel', 'user')}
        print('%s: per round trip kernel %.0f, user %.0f, in all %.0f' % (name, d['kernel'], d['user'], d['kernel'] + d['user']))
