#!/usr/bin/env python3
"""Reads doorbell.sh's function_graph traces (funcgraph-tail and -abstime).

Per function: calls in the traced window and the median and quartiles of
its time, children included, in µs. Per operation of the client, from the
time stamps: "post -> completion" is from a doorbell's ib_uverbs_write
entry to the first completion rxe_completer writes after it (rxe_cq_post
inside rxe_completer: the client's own send or read completes), and
"completion -> next post" from there to the next doorbell (the client's
poll finding it, its user time and the system call's entry).
Usage: doorbell.py TRACE..."""
import re
import statistics
import sys

# "   22.794545 |   0)               |  ksys_write() {"
# "   22.794620 |   0) + 73.059 us   |  } /* rxe_requester [rdma_rxe] */"
# "   22.794625 |   0)   1.152 us    |  rxe_cq_post [rdma_rxe]();"
LINE = re.compile(r'^\s*([\d.]+) \|\s*(\d+)\)\s+[+!#*@$]?\s*(?:([\d.]+) us)?\s+\|\s+(.*)$')
ENTRY = re.compile(r'^(\w+)(?: \[\w+\])?\(\) \{$')
EXIT = re.compile(r'^\} /\* (\w+)(?: \[\w+\])? \*/$')
LEAF = re.compile(r'^(\w+)(?: \[\w+\])?\(\);$')


def spread(ts):
    q = statistics.quantiles(ts, n=4) if len(ts) > 1 else [ts[0]] * 3
    return f"{len(ts):6d}  median {q[1]:8.1f}  [{q[0]:.1f}-{q[2]:.1f}] us  total {sum(ts)/1000:8.1f} ms"


for path in sys.argv[1:]:
    times, phases = {}, {}
    stacks = {}  # per CPU: the open functions
    post = done = None
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            ts, cpu, dur, text = float(m.group(1)) * 1e6, m.group(2), m.group(3), m.group(4).strip()
            stack = stacks.setdefault(cpu, [])
            if e := ENTRY.match(text):
                stack.append(e.group(1))
                if e.group(1) == 'ib_uverbs_write':
                    if done is not None:
                        phases.setdefault('completion -> next post', []).append(ts - done)
                    post, done = ts, None
                continue
            closing = EXIT.match(text)
            e = closing or LEAF.match(text)
            if not e or dur is None:
                continue
            name = e.group(1)
            times.setdefault(name, []).append(float(dur))
            if closing and stack:
                stack.pop()
            if name == 'rxe_cq_post' and stack and stack[-1] == 'rxe_completer' and post is not None and done is None:
                done = ts
                phases.setdefault('post -> completion', []).append(ts - post)
    print(path)
    for name, ts in sorted(times.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {name:24s} {spread(ts)}")
    for name, ts in phases.items():
        print(f"  {name:24s} {spread(ts)}")
