#!/bin/sh
# One VM under the instruction clock (rdmalab run --icount): per operation
# of $INV_TEST ($INV_SIZE bytes; read_bw 4 KiB by default), the softirqs,
# wake-ups, context switches and system calls of the whole guest while
# perftest's client (c) or rdmaperf's (g) runs against perftest's server,
# counted with tracepoints (perf stat -a) at 1,024 and 8,192 iterations,
# c g g c, twice; wakeups.py subtracts, so set-up and teardown cancel.
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 -- sh docs/bench/icount-6.1-2026-11-28/wakeups.sh > out/inv/wakeups.log &&
#   python3 docs/bench/icount-6.1-2026-11-28/wakeups.py out/inv/wakeups.log
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
S=${INV_SIZE:-4096}; T=${INV_TEST:-read_bw}
port=19950
E=irq:softirq_raise,irq:softirq_entry,irq:tasklet_entry,sched:sched_wakeup,sched:sched_switch,sched:sched_waking,syscalls:sys_enter_write,syscalls:sys_enter_nanosleep,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_pwait,signal:signal_generate,irq:irq_handler_entry,timer:hrtimer_expire_entry,exceptions:page_fault_user
for rep in 1 2; do
for N in 1024 8192; do
for cli in c g g c; do
  port=$((port+1))
  ib_$T -s $S -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
  spid=$!; sleep 0.5
  if [ $cli = c ]; then set -- ib_$T -s $S -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR; else set -- $P $T --perftest -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR; fi
  perf stat -a -x, -e $E -o /tmp/ps.txt -- "$@" > /tmp/cli.out 2>&1
  wait $spid
  bw=$(grep -E "^ +$S " /tmp/cli.out | tr -s ' ' | cut -d' ' -f5)
  echo "=== rep $rep N $N client $cli BW $bw: $(grep -v '^#' /tmp/ps.txt | grep . | awk -F, '{printf "%s=%s ", $3, $1}')"
done
done
done
