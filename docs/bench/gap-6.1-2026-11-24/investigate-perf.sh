#!/bin/sh
# One VM, send_bw and write_bw 4 KiB against perftest's server: where the
# client's time goes, for perftest's client and rdmaperf's (--perftest).
# For each client: two plain runs (BW, CPU time, context switches), a
# system-wide perf profile (samples per thread and per kernel symbol), the
# client's tracepoint counts (interrupts, IPIs, switches, faults, syscalls)
# and strace -c -f, plus rxe's hw_counters over each run and both headers.
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/gap-6.1-2026-11-24/investigate-perf.sh
here=docs/bench/gap-6.1-2026-11-24
. $here/common.sh
P=${INV_BIN:-out/inv}/rdmaperf
port=19700
hw() { for f in $p/hw_counters/*; do printf "%s=%s " ${f##*/} $(cat $f); done; }
EV=sched:sched_switch,sched:sched_wakeup,sched:sched_migrate_task,irq:irq_handler_entry,irq:softirq_entry,irq_vectors:local_timer_entry,irq_vectors:reschedule_entry,irq_vectors:call_function_entry,irq_vectors:call_function_single_entry,tlb:tlb_flush,exceptions:page_fault_user,exceptions:page_fault_kernel,raw_syscalls:sys_enter,timer:hrtimer_expire_entry
perf stat -e $EV true >/dev/null 2>&1 || EV=sched:sched_switch,irq:irq_handler_entry,irq:softirq_entry,raw_syscalls:sys_enter,exceptions:page_fault_user
cli() { # tool test
  case $1 in
    goq) echo "env RDMAPERF_YIELD=0 GODEBUG=asyncpreemptoff=1 $P $2 --perftest -s 4096 -n $N -d $d -x $gid -p $port $RDMALAB_ADDR";;
    go) echo "$P $2 --perftest -s 4096 -n $N -d $d -x $gid -p $port $RDMALAB_ADDR";;
    c) echo "ib_$2 -s 4096 -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR";;
  esac
}
bwline() { grep -E '^ +4096 ' $1 | tr -s ' '; }
for t in send_bw write_bw; do
  for tool in c go goq c go goq; do
    start $t; h0=$(hw); rm -f /tmp/stamps
    RDMAPERF_STAMPS=/tmp/stamps /usr/bin/time -f "%e s %U user %S sys %c ivcsw %w vcsw" $(cli $tool $t) > /tmp/cli.out 2>/tmp/cli.time
    wait $spid; h1=$(hw)
    echo "=== plain $t $tool: $(bwline /tmp/cli.out)  ($(tail -1 /tmp/cli.time))"
    [ -f /tmp/stamps ] && sh $here/stampgaps.sh /tmp/stamps gaps
    echo "    hw before: $h0"; echo "    hw after:  $h1"
  done
  for tool in c go; do
    echo "=== header $t $tool"; start $t; $(cli $tool $t) 2>&1 | head -40; wait $spid
    echo "=== strace $t $tool"; start $t
    strace -f -c -o /tmp/strace.out $(cli $tool $t) > /tmp/cli.out 2>&1; wait $spid
    echo "    $(bwline /tmp/cli.out)"; cat /tmp/strace.out
    echo "=== perf stat $t $tool"; start $t
    perf stat -e $EV -o /tmp/stat.out $(cli $tool $t) > /tmp/cli.out 2>&1; wait $spid
    echo "    $(bwline /tmp/cli.out)"; cat /tmp/stat.out
    echo "=== perf record -a $t $tool"; start $t
    $(cli $tool $t) > /tmp/cli.out 2>&1 &
    cpid=$!
    perf record -a -g -F 499 -o /tmp/perf.data -- sh -c "while kill -0 $cpid 2>/dev/null; do sleep 0.05; done" 2>/tmp/rec.err
    wait $cpid; wait $spid
    echo "    client pid $cpid server pid $spid: $(bwline /tmp/cli.out)"
    perf report -i /tmp/perf.data --no-children --sort pid --stdio -g none 2>/dev/null | grep -v '^$' | head -30
    echo "--- client threads' symbols"
    perf report -i /tmp/perf.data --no-children --pid $cpid --sort dso,sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -45
    echo "--- all samples' symbols"
    perf report -i /tmp/perf.data --no-children --sort sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30
    if [ $t = send_bw ]; then
      echo "--- client callers (caller graph, top)"
      perf report -i /tmp/perf.data --no-children --pid $cpid --sort sym --stdio -G --percent-limit 3 2>/dev/null | grep -v '^$' | head -120
    fi
  done
done
