#!/usr/bin/env python3
"""Reads record.sh's perf script dumps (INV_KIND=sysmon: sysmon-N-TOOL.txt)
and prints, per run, the client's loop (its longest run of doorbell writes less than 20 ms
apart), how many nanosleeps (Go's sysmon sleeps with usleep) its process
made in the whole run, inside the loop, and inside the loop's first 25 ms.
  python3 docs/bench/warmup-6.1-2026-11-28/sysmon.py out/inv/sysmon-*.txt"""
import re,sys,collections
for p in sys.argv[1:]:
    rows=[]
    for ln in open(p):
        m=re.match(r'^\s*(\S+)\s+(\d+)/(\d+)\s+([\d.]+):\s*(\S+):',ln)
        if m: rows.append((m.group(1),int(m.group(2)),int(m.group(3)),float(m.group(4)),m.group(5)))
    cl=[r for r in rows if r[0]=='rdmaperf']
    w=[r for r in cl if 'sys_enter_write' in r[4]]
    pid=collections.Counter(r[1] for r in w).most_common(1)[0][0]
    w=[r for r in w if r[1]==pid]
    # the loop: the longest run of doorbells (writes less than 5 ms apart)
    ts=sorted(r[3] for r in w); best=(0,0,0); s=0
    for k in range(1,len(ts)+1):
        if k==len(ts) or ts[k]-ts[k-1]>0.02:
            if k-s>best[0]: best=(k-s,ts[s],ts[k-1])
            s=k
    n,lo,hi=best
    ns=[r for r in rows if r[1]==pid and 'nanosleep' in r[4]]
    inwin=[r for r in ns if lo<=r[3]<=hi]
    first=[r for r in inwin if r[3]<lo+0.025]
    print(f'{p}: loop {n} doorbells {1e3*(hi-lo):.1f} ms; client nanosleeps: whole run {len(ns)}, in loop {len(inwin)} (first 25 ms {len(first)})')
