#!/bin/sh
# One VM under the instruction clock: perf record -a of a client's run
# against perftest's server, for each client of $INV_ORDER:
#   c  perftest's client
#   g  rdmaperf --perftest --warmup 0 (no warm-up)
#   w  rdmaperf --perftest (the default warm-up)
# INV_KIND=sysmon (default): nanosleep (Go's sysmon sleeps with usleep) and
#   write (the doorbells), clients g w g w; sysmon.py counts the client's
#   nanosleeps inside its doorbell window. perf's tracing slows the run by
#   about 40 %.
# INV_KIND=wakestack: ksoftirqd's wake-ups with their kernel call chains,
#   clients c g c g, 8,192 iterations; wakestack.py groups them by where
#   they came from.
# The perf script dumps go to $INV_OUT (default out/inv) as KIND-N-TOOL.txt.
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 [--env INV_KIND=wakestack] -- sh docs/bench/warmup-6.1-2026-11-28/record.sh &&
#   python3 docs/bench/warmup-6.1-2026-11-28/sysmon.py out/inv/sysmon-*.txt   # or wakestack.py out/inv/wakestack-*.txt
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
kind=${INV_KIND:-sysmon}
if [ $kind = wakestack ]; then
  order="c g c g"; iters=8192; fields=comm,pid,tid,time,event,trace,ip,sym
  record() { perf record -q -a -g --kernel-callchains -e sched:sched_wakeup --filter 'comm == "ksoftirqd/0"' -o /tmp/perf.data -- "$@"; }
else
  order="g w g w"; iters=1024; fields=comm,pid,tid,time,event
  record() { perf record -q -a -e syscalls:sys_enter_nanosleep,syscalls:sys_enter_write -o /tmp/perf.data -- "$@"; }
fi
N=${INV_ITERS:-$iters}; S=${INV_SIZE:-4096}; T=${INV_TEST:-read_bw}
port=20300
i=0
for tool in ${INV_ORDER:-$order}; do
  port=$((port+1)); i=$((i+1))
  ib_$T -s $S -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
  spid=$!; sleep 0.5
  case $tool in
    c) set -- ib_$T -s $S -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR;;
    g) set -- $P $T --perftest --warmup 0 -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR;;
    w) set -- $P $T --perftest -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR;;
  esac
  record "$@" > /tmp/cli.out 2>/tmp/rec.err
  wait $spid
  echo "=== $T $S x $N $tool: $(grep -E "^ +$S " /tmp/cli.out | tr -s ' ')"
  perf script -i /tmp/perf.data -F $fields 2>/dev/null > ${INV_OUT:-out/inv}/$kind-$i-$tool.txt
done
