"""Per operation, from wakeups.sh's log: each event's mean count at 8,192
iterations minus its mean at 1,024, divided by 7,168, per client."""
import collections
import re
import sys

runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.search(r'=== rep \d N (\d+) client (\w) BW ([\d.]+): (.*)', line)
    if m:
        d = {k.split(':')[-1]: int(v) for k, v in re.findall(r'(\S+)=(\d+)', m.group(4))}
        d['BW'] = float(m.group(3))
        runs[(m.group(2), int(m.group(1)))].append(d)
for c, name in (('c', 'perftest'), ('g', 'rdmaperf')):
    lo, hi = runs[(c, 1024)], runs[(c, 8192)]
    def mean(rs, k):
        return sum(r[k] for r in rs) / len(rs)
    print('%s: BW %s (8,192 iterations)' % (name, ' '.join('%.2f' % r['BW'] for r in hi)))
    print('  per operation: ' + ' '.join('%s %.3f' % (k, (mean(hi, k) - mean(lo, k)) / 7168) for k in lo[0] if k != 'BW'))
