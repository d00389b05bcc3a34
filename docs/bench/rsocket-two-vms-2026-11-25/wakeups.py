# The Go ends' Stats in a BenchmarkLabRstream log (the last boot in it):
# median wake-ups and completions per round trip (latency case) or per
# transfer (bandwidth cases), per pair and side, with the range over the
# rounds.   python3 wakeups.py bench-6.1-two-vms.log
import re,sys,statistics,collections
f=open(sys.argv[1]).read()
# only the last boot
i=f.rfind('ready in')
f=f[i:]
d=collections.defaultdict(list)
for m in re.finditer(r'go:\d+: (.*?), (64 KiB|1 MiB|64 B round trip): the Go (client|server) woke (\d+) times for (\d+) completions \(([\d.]+) and ([\d.]+) per transfer\)',f):
    pair,case,role,w,c,wp,cp=m.groups()
    d[(case,pair,role)].append((float(wp),float(cp)))
for k in sorted(d):
    v=d[k]
    ws=[x[0] for x in v]; cs=[x[1] for x in v]
    mult = 2 if k[0].startswith('64 B') else 1
    print(f"{k[0]:16} {k[1]:45} {k[2]:6} wakeups/{'RT' if mult==2 else 'xfer'} {statistics.median(ws)*mult:.2f} [{min(ws)*mult:.2f}-{max(ws)*mult:.2f}] completions {statistics.median(cs)*mult:.2f} n={len(v)}")
