#!/bin/sh
# clock.sh: which clock source the guest runs on, and what it costs each
# client's process. One VM, send_bw and write_bw 4 KiB (40,960 iterations)
# against perftest's server, perftest's client (c) and rdmaperf's (go):
# strace -f -c (clock_gettime and gettimeofday are the clock reads that were system
# calls), and perf stat of the client's switches, IPIs, TLB flushes and
# system calls (the same events as ../gap-6.1-2026-11-24/investigate-perf.sh).
# Run once per boot:
#   CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 --append '' -- sh docs/bench/short-6.1-2026-11-25-tsc/clock.sh
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 --append 'clocksource=tsc tsc=reliable' -- sh docs/bench/short-6.1-2026-11-25-tsc/clock.sh
. docs/bench/gap-6.1-2026-11-24/common.sh
P=${INV_BIN:-out/inv}/rdmaperf
port=19800
c=/sys/devices/system/clocksource/clocksource0
echo "cmdline: $(cat /proc/cmdline)"
echo "current_clocksource: $(cat $c/current_clocksource); available: $(cat $c/available_clocksource)"
echo "cpu flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(tsc|constant_tsc|nonstop_tsc|tsc_known_freq|rdtscp|tsc_reliable)$' | tr '\n' ' ')"
echo "--- dmesg (clocksource, tsc, hpet)"
dmesg | grep -iE 'clocksource|tsc|hpet' | sed 's/^/    /'
EV=sched:sched_switch,sched:sched_wakeup,irq_vectors:local_timer_entry,irq_vectors:reschedule_entry,irq_vectors:call_function_single_entry,tlb:tlb_flush,raw_syscalls:sys_enter
cli() { # tool test
  case $1 in
    go) echo "$P $2 --perftest -s 4096 -n $N -d $d -x $gid -p $port $RDMALAB_ADDR";;
    c) echo "ib_$2 -s 4096 -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR";;
  esac
}
bwline() { grep -E '^ +4096 ' $1 | tr -s ' '; }
for t in send_bw write_bw; do
  for tool in c go; do
    start $t
    strace -f -c -o /tmp/strace.out $(cli $tool $t) > /tmp/cli.out 2>&1; wait $spid
    echo "=== strace $t $tool: $(bwline /tmp/cli.out)"
    grep -E 'clock_gettime|gettimeofday|nanosleep|futex|write$|total' /tmp/strace.out | sed 's/^/    /'
    start $t
    perf stat -e $EV -o /tmp/stat.out $(cli $tool $t) > /tmp/cli.out 2>&1; wait $spid
    echo "=== perf stat $t $tool: $(bwline /tmp/cli.out)"
    grep -E '^ +[0-9]' /tmp/stat.out | tr -s ' ' | sed 's/^/   /'
  done
done
