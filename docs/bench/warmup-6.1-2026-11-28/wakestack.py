#!/usr/bin/env python3
"""Reads record.sh's perf script dumps (INV_KIND=wakestack:
wakestack-N-TOOL.txt, TOOL c for perftest's client, g for rdmaperf's) and
prints per run ksoftirqd's wake-ups by waker (the task running when it was
woken) and by call chain (the kernel frames from the wake-up outward, up
to the system call, interrupt or softirq entry), most frequent first.
  python3 docs/bench/warmup-6.1-2026-11-28/wakestack.py out/inv/wakestack-*.txt"""
import collections, re, sys

HEAD = re.compile(r'^\s*(\S+)\s+(\d+)/(\d+)\s+([\d.]+):\s*(\S+):\s*(.*)$')
FRAME = re.compile(r'^\s+[0-9a-f]+\s+(\S+)')
SKIP = ('ttwu_do_wakeup', 'try_to_wake_up', 'wake_up_process', 'wakeup_softirqd', 'raise_softirq_irqoff',
        '__raise_softirq_irqoff', '__tasklet_schedule_common', '__tasklet_schedule')
ENTRY = ('entry_SYSCALL_64_after_hwframe', 'asm_sysvec_apic_timer_interrupt', 'asm_common_interrupt',
         'run_ksoftirqd', 'ret_from_fork', 'asm_sysvec_call_function_single')


def blocks(path):
    cur = None
    for ln in open(path, errors='replace'):
        m = HEAD.match(ln)
        if m:
            if cur:
                yield cur
            cur = {'comm': m.group(1), 'pid': int(m.group(2)), 'stack': []}
            continue
        f = FRAME.match(ln)
        if f and cur is not None:
            cur['stack'].append(f.group(1).split('+')[0])
    if cur:
        yield cur


for path in sys.argv[1:]:
    ev = list(blocks(path))
    print(f'{path}: {len(ev)} wake-ups of ksoftirqd')
    who = collections.Counter(re.sub(r'\d+$', '', b['comm']) for b in ev)
    print('  by waker:', ', '.join(f'{w} {n}' for w, n in who.most_common(6)))
    chains = collections.Counter()
    for b in ev:
        fr = [f for f in b['stack'] if f not in SKIP]
        out = []
        for f in fr:
            out.append(f)
            if f in ENTRY or f.startswith('__x64_sys_') or f == '__do_softirq':
                break
        chains[' < '.join(out[:9])] += 1
    for c, n in chains.most_common(6):
        print(f'  {n:6d}  {c}')
