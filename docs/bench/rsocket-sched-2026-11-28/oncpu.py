#!/usr/bin/env python3
"""oncpu.py TRACE...: from a tracefs text trace of sched_switch and
raw_syscalls of one process (ftrace.sh), how its time on the CPU splits:
user space, and each kind of system call (by number and, for write, by
length), counting only time on the CPU (a call that blocks stops counting
at the switch and resumes at the switch back). Per run = per wake-up.
Also per thread: runs and time on the CPU."""
import re, sys, collections

sw = re.compile(r'sched_switch: prev_comm=(.*) prev_pid=(\d+) .* prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)')
ev = re.compile(r'^\s*(.+)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): (sys_enter|sys_exit): NR (\d+) (?:\(\w+, \w+, (\w+))?')
ts_re = re.compile(r'\s([\d.]+): ')
# The processes traced: command names starting with one of these.
ours = ('rstream', 'rsocket.test', 'ib_', 'rdmaperf')

cpu_re = re.compile(r'\[(\d+)\]')

for path in sys.argv[1:]:
    # The traced threads (set_event_pid): those whose system calls are in
    # the trace; a switch's other side may be any process.
    traced = set()
    for line in open(path):
        e = ev.search(line)
        if e and e.group(1).startswith(ours):
            traced.add(e.group(2))
    on = {}            # per CPU: the pid of ours on it now
    last = {}          # per CPU: time of its last event while ours ran
    insc = {}          # pid -> syscall label while inside one
    acc = collections.Counter()
    calls = collections.Counter()
    runs = 0
    first = lastt = None
    threads = collections.Counter()
    tcpu = collections.Counter()
    comm = ''
    for line in open(path):
        if line.startswith('#'):
            continue
        m = ts_re.search(line)
        c = cpu_re.search(line)
        if not m or not c:
            continue
        t, cpu = float(m.group(1)), c.group(1)
        if on.get(cpu) is not None:
            acc[insc.get(on[cpu], 'user')] += t - last[cpu]
            tcpu[on[cpu]] += t - last[cpu]
            last[cpu] = t
        s = sw.search(line)
        if s:
            pc, pp, st, nc, np_ = s.groups()
            if np_ in traced:
                on[cpu], last[cpu], comm = np_, t, nc
                runs += 1
                threads[np_] += 1
                if first is None:
                    first = t
            elif on.get(cpu) is not None:
                on[cpu] = None
                lastt = t
            continue
        e = ev.search(line)
        if e:
            _, pid, _, kind, nr, arg = e.groups()
            if kind == 'sys_enter':
                label = 'NR ' + nr
                if nr == '1' and arg:
                    label += ' len %d' % int(arg, 16)
                insc[pid] = label
                calls[label] += 1
            else:
                insc.pop(pid, None)
    span = lastt - first
    tot = sum(acc.values())
    print(f'{path}: {comm}, {runs} runs in {span*1e3:.0f} ms, on CPU {tot*1e3:.1f} ms, {tot/runs*1e6:.0f} us per run')
    print('  threads (runs, ms on CPU): ' + ', '.join(f'{k} ({threads[k]}, {tcpu[k]*1e3:.1f})' for k in sorted(threads, key=lambda k: -tcpu[k])))
    for k, v in sorted(acc.items(), key=lambda x: -x[1]):
        c = calls.get(k, 0)
        each = f'{v/c*1e6:6.1f} us each, {c/runs:.2f} per run' if c else ''
        print(f'  {k:<14} {v/runs*1e6:6.0f} us per run  {each}')
