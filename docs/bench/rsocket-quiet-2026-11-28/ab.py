"""Medians, ranges and ratio to C of the runs in the log of
../rsocket-sched-2026-11-28/ab.sh (lines "round R KIND USEC"; c is rstream,
o and n the binaries before and after)."""
import re
import statistics
import sys

runs = {}
for line in open(sys.argv[1]):
    m = re.search(r'round (\d+) (\w) ([\d.]+)', line)
    if m:
        runs.setdefault(m.group(2), []).append(float(m.group(3)))
c = statistics.median(runs['c'])
for kind, v in runs.items():
    med = statistics.median(v)
    print('%s: median %.1f [%.1f-%.1f] of %d runs, %.3f x c' % (kind, med, min(v), max(v), len(v), med / c))
