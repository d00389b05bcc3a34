#!/bin/sh
# One VM under the instruction clock (rdmalab run --icount): each case of
# $INV_CASES ("test:size:iters ...") run by a sequence of clients,
# $INV_ORDER, one after the other in one boot:
#   c  perftest's client against perftest's server
#   g  rdmaperf --perftest --warmup 0 against perftest's server (no warm-up)
#   w  rdmaperf --perftest (default warm-up, 30 ms) against perftest's server
#   n  rdmaperf against rdmaperf, --warmup 0 (the bench's pairing)
#   m  rdmaperf against rdmaperf, default warm-up
#   pK rdmaperf --perftest built with pad.patch (out/inv/rdmaperf-pad), K
#      extra rounds of a 4-instruction loop per post
# Prints the client's perftest line (BW peak, BW average, MsgRate).
# INV_COUNT=1 also counts the whole guest's wake-ups, context switches and
# softirqs during each client's run (perf stat -a: counting, which does not
# slow the run). INV_GRAN=NS first sets the scheduler's wake-up
# granularity (debugfs sched/wakeup_granularity_ns; 1 ms by default here).
# INV_SETUP, if set, is run first (e.g. echo 0 > /proc/sys/kernel/sched_autogroup_enabled).
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 \
#     --env "INV_CASES=read_bw:4096:1024" --env "INV_ORDER=c g w c g w c g w" -- sh docs/bench/warmup-6.1-2026-11-28/ab.sh
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
[ -f ${INV_BIN:-out/inv}/rdmaperf-pad ] && cp ${INV_BIN:-out/inv}/rdmaperf-pad /tmp/rdmaperf-pad
[ -n "$INV_SETUP" ] && { eval "$INV_SETUP" || exit 1; echo "setup: $INV_SETUP"; }
if [ -n "$INV_GRAN" ]; then
  echo $INV_GRAN > /sys/kernel/debug/sched/wakeup_granularity_ns || exit 1
fi
echo "wakeup_granularity_ns $(cat /sys/kernel/debug/sched/wakeup_granularity_ns)"
count=
[ "$INV_COUNT" = 1 ] && count="perf stat -a -x, -e sched:sched_wakeup,sched:sched_switch,irq:softirq_entry -o /tmp/ps.txt --"
port=20100
for case in ${INV_CASES:-read_bw:4096:1024}; do
  IFS=: read T S N <<EOT
$case
EOT
  for tool in ${INV_ORDER:-c g w c g w c g w}; do
    port=$((port+1))
    case $tool in
      n|m) $P $T -s $S -n $N -d $d -x $gid -p $port > /tmp/srv.out 2>&1 & ;;
      *) ib_$T -s $S -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 & ;;
    esac
    spid=$!; sleep 0.5
    case $tool in
      c) set -- ib_$T -s $S -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR;;
      g) set -- $P $T --perftest --warmup 0 -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR;;
      w) set -- $P $T --perftest -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR;;
      n) set -- $P $T --warmup 0 -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR;;
      m) set -- $P $T -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR;;
      p*) set -- env RDMAPERF_PAD=${tool#p} /tmp/rdmaperf-pad $T --perftest -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR;;
    esac
    $count "$@" > /tmp/cli.out 2>&1
    wait $spid
    c=; [ -n "$count" ] && c="| $(grep -v '^#' /tmp/ps.txt | grep . | awk -F, '{printf "%s=%s ", $3, $1}')"
    echo "=== $T $S x $N $tool: $(grep -E "^ +$S " /tmp/cli.out | tr -s ' ') $c"
  done
done
