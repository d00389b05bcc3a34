#!/usr/bin/env python3
"""Reads doorbell.sh's function_graph traces: per function, how many calls
per traced window and the median and quartiles of its time (children
included), in µs, and the time between one ksys_write's return and the
next one's entry (the loop's user time, polling included, and the system
call's entry and exit). Usage: doorbell.py TRACE..."""
import re
import statistics
import sys

# "  0) + 73.059 us   |  } /* rxe_requester [rdma_rxe] */" or
# "  0)   1.152 us    |  rxe_cq_post [rdma_rxe]();" (a module's functions carry its name)
LINE = re.compile(r'^\s*(?:([\d.]+) \|)?\s*\d+\)\s+[+!#*@$]?\s*([\d.]+) us\s+\|\s+(?:\} /\* (\w+)(?: \[\w+\])? \*/|(\w+)(?: \[\w+\])?\(\);)')

for path in sys.argv[1:]:
    times = {}
    last_end = None
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if m:
                name = m.group(3) or m.group(4)
                dur = float(m.group(2))
                times.setdefault(name, []).append(dur)
                if name == 'ksys_write' and m.group(1):
                    # From the end of one write to the end of the next,
                    # less the next write: the loop's time outside it.
                    end = float(m.group(1)) * 1e6
                    if last_end is not None:
                        times.setdefault('(between writes)', []).append(end - last_end - dur)
                    last_end = end
    print(path)
    for name, ts in sorted(times.items(), key=lambda kv: -sum(kv[1])):
        q = statistics.quantiles(ts, n=4) if len(ts) > 1 else [ts[0]] * 3
        print(f"  {name:22s} {len(ts):6d} calls  median {q[1]:8.1f}  [{q[0]:.1f}-{q[2]:.1f}] us  total {sum(ts)/1000:8.1f} ms")
