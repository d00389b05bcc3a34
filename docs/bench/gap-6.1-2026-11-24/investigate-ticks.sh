#!/bin/sh
# One VM, send_bw and write_bw 4 KiB against perftest's server, three
# clients: perftest's (c), rdmaperf before the change (a: the stamp arrays
# fault in during the loop) and after it (b: newStamps touches them first).
# Part 1: each client under `perf record` of its doorbell writes, timer
# interrupts, switches and softirqs (in its own threads only), summarised
# by gaps.sh: the same tracing cost for every client, so the gaps between
# doorbells compare directly. Part 2: plain runs, rotating c a b, with the
# process's minor faults and, for a and b, the gaps between posts from
# RDMAPERF_STAMPS.
# Run: build out/inv/rdmaperf-a (before) and out/inv/rdmaperf-b (after), then
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/gap-6.1-2026-11-24/investigate-ticks.sh
here=docs/bench/gap-6.1-2026-11-24
. $here/common.sh
B=${INV_BIN:-out/inv}
port=19600
cli() { # tool test
  case $1 in
    c) echo "ib_$2 -s 4096 -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR";;
    *) echo "$B/rdmaperf-$1 $2 --perftest -s 4096 -n $N -d $d -x $gid -p $port $RDMALAB_ADDR";;
  esac
}
bwline() { grep -E '^ +4096 ' $1 | tr -s ' '; }
EV=syscalls:sys_enter_write,irq_vectors:local_timer_entry,sched:sched_switch,irq:softirq_entry
for t in send_bw write_bw; do
  for tool in c a b c a b; do
    start $t
    perf record -q -e $EV -o /tmp/pr.data -- $(cli $tool $t) > /tmp/cli.out 2>/tmp/rec.err
    wait $spid
    echo "=== traced $t $tool: $(bwline /tmp/cli.out)"
    perf script -i /tmp/pr.data -F tid,cpu,time,event > /tmp/ps.txt 2>/dev/null
    sh $here/gaps.sh /tmp/ps.txt
  done
done
for t in send_bw write_bw; do
  for tool in c a b c a b c a b; do
    start $t; rm -f /tmp/stamps
    RDMAPERF_STAMPS=/tmp/stamps /usr/bin/time -f "%e s %U user %S sys %c ivcsw %w vcsw %R minflt" $(cli $tool $t) > /tmp/cli.out 2>/tmp/cli.time
    wait $spid
    echo "=== plain $t $tool: $(bwline /tmp/cli.out)  ($(tail -1 /tmp/cli.time))"
    [ -f /tmp/stamps ] && sh $here/stampgaps.sh /tmp/stamps stamps
  done
done
