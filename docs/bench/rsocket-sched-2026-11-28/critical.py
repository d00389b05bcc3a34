#!/usr/bin/env python3
"""critical.py TRACE...: a Go end's path from its wake-up to its next
send, from an ftrace.sh trace with uprobes (INV_UPROBES): for every run
that sends (a 32-byte write(2): the send doorbell), the time between
consecutive marks, median [quartiles] in us. Each uprobe costs a trap of
its own, so the steps after one include it."""
import re, sys, statistics

line_re = re.compile(r'^\s*(.+)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): (\S+): (.*)$')
marks = ['wakeup', 'on CPU', 'epoll_pwait returns', 'tryread (event fd read attempt)',
         'read(2) of the event returns', 'progressLocked (poll CQ)', 'Conn.Write',
         'QP.PostSend', 'doorbell write(2)']
for path in sys.argv[1:]:
    steps = {i: [] for i in range(1, len(marks))}
    seq = None
    for l in open(path):
        if l.startswith('#'):
            continue
        m = line_re.match(l)
        if not m:
            continue
        comm, pid, t, ev, rest = m.group(1), m.group(2), float(m.group(3)), m.group(4), m.group(5)
        if ev == 'sched_wakeup' and 'comm=rsocket' in rest:
            seq = {0: t}
        elif seq is None:
            continue
        elif ev == 'sched_switch' and 'next_comm=rsocket' in rest and 1 not in seq:
            seq[1] = t
        elif ev == 'sys_exit' and rest.startswith('NR 281') and 2 not in seq:
            seq[2] = t
        elif ev == 'tryread' and 2 in seq and 3 not in seq:
            seq[3] = t
        elif ev == 'sys_exit' and rest.startswith('NR 0 ') and 3 in seq and 4 not in seq and not rest.endswith('-11'):
            seq[4] = t
        elif ev == 'progress' and 4 in seq and 5 not in seq:
            seq[5] = t
        elif ev == 'write' and 5 in seq and 6 not in seq:
            seq[6] = t
        elif ev == 'postsend' and 6 in seq and 7 not in seq:
            seq[7] = t
        elif ev == 'sys_enter' and rest.startswith('NR 1 (') and ', 20,' in rest and 7 in seq:
            seq[8] = t
            if all(i in seq for i in range(9)):
                for i in range(1, 9):
                    steps[i].append((seq[i] - seq[i - 1]) * 1e6)
            seq = None
    n = len(steps[1])
    print(f'{path}: {n} runs from wake-up to send')
    if not n:
        continue
    total = 0
    for i in range(1, 9):
        a = sorted(steps[i])
        med = statistics.median(a)
        total += med
        print(f'  {marks[i-1]:>32} -> {marks[i]:<32} {med:6.0f} [{a[n//4]:.0f}-{a[3*n//4]:.0f}]')
    print(f'  {"sum of medians":>32}    {total:6.0f}')
