"""Per round trip, from syscalls.sh's log: each kind's system calls at 2,200
round trips minus those at 200, divided by 2,000, pairing the runs of one
repetition; and rstream's usec/xfer (half a round trip) of each run."""
import collections
import re
import sys

runs = []
for line in open(sys.argv[1]):
    m = re.search(r'=== (\S+) I=(\d+): (.*)', line)
    if m:
        runs.append({'k': m.group(1), 'I': int(m.group(2)), 'us': m.group(3).split()[-1], 'sc': {}})
        continue
    m = re.search(r'(\d+) syscalls:sys_enter_(\S+)', line)
    if m and runs:
        runs[-1]['sc'][m.group(2)] = int(m.group(1))
by = collections.defaultdict(list)
for r in runs:
    by[(r['k'], r['I'])].append(r)
for k in ['c', 'old', 'new']:
    for lo, hi in zip(by[(k, 200)], by[(k, 2200)]):
        d = {n: (hi['sc'].get(n, 0) - lo['sc'].get(n, 0)) / 2000 for n in set(lo['sc']) | set(hi['sc'])}
        calls = ' '.join('%s %.2f' % (n, v) for n, v in sorted(d.items(), key=lambda x: -x[1]) if abs(v) >= 0.02)
        print('%-3s usec/xfer %s / %s  syscalls per round trip %.2f: %s' % (k, lo['us'], hi['us'], sum(d.values()), calls))
