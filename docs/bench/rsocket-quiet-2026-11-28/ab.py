"""Medians, ranges and ratio to C of the runs in the log of
../rsocket-sched-2026-11-28/ab.sh (lines "round R KIND USEC"; c is rstream,
o and n the binaries before and after), and per round the ratio after/before
(the mean of the round's two n runs over its two o runs)."""
import re
import statistics
import sys

runs, rounds = {}, {}
for line in open(sys.argv[1]):
    m = re.search(r'round (\d+) (\w) ([\d.]+)', line)
    if m:
        v = float(m.group(3))
        runs.setdefault(m.group(2), []).append(v)
        rounds.setdefault(m.group(1), {}).setdefault(m.group(2), []).append(v)
c = statistics.median(runs['c'])
for kind, v in runs.items():
    med = statistics.median(v)
    print('%s: median %.1f [%.1f-%.1f] of %d runs, %.3f x c' % (kind, med, min(v), max(v), len(v), med / c))
r = [statistics.mean(x['n']) / statistics.mean(x['o']) for x in rounds.values()]
print('after/before per round: median %.3f [%.3f-%.3f] of %d rounds' % (statistics.median(r), min(r), max(r), len(r)))
