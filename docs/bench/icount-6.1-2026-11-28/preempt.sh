#!/bin/sh
# One VM under the instruction clock (rdmalab run --icount), $INV_TEST of
# $INV_SIZE bytes, $INV_ITERS iterations, always against perftest's server.
# 1. Clients rotated $INV_REPS times: c perftest, g rdmaperf --perftest, and
#    g with a runtime knob: gy RDMAPERF_YIELD=0 (no runtime.Gosched in the
#    loop), ga GODEBUG=asyncpreemptoff=1; BW and the client's context
#    switches (GNU time: %c involuntary, %w voluntary).
# 2. One run of c and one of g with sched:sched_switch recorded system-wide:
#    who took the CPU from the client's threads (prev_state R: preempted),
#    counted by the next task's name, and each client thread's switches.
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 -- sh docs/bench/icount-6.1-2026-11-28/preempt.sh
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
N=${INV_ITERS:-4096}; S=${INV_SIZE:-4096}; T=${INV_TEST:-read_bw}
port=19900
cli() { # variant
  case $1 in
    c) echo "ib_$T -s $S -n $N -d $d -x $gid -p $port -F";;
    g) echo "$P $T --perftest -s $S -n $N -d $d -x $gid -p $port";;
    gy) echo "env RDMAPERF_YIELD=0 $P $T --perftest -s $S -n $N -d $d -x $gid -p $port";;
    ga) echo "env GODEBUG=asyncpreemptoff=1 $P $T --perftest -s $S -n $N -d $d -x $gid -p $port";;
  esac
}
server() { port=$((port+1)); ib_$T -s $S -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 & spid=$!; sleep 0.5; }
bw() { grep -E "^ +$S " /tmp/cli.out | tr -s ' ' | cut -d' ' -f5; }
for rep in $(seq ${INV_REPS:-3}); do
  for v in c g gy ga ga gy g c; do
    server
    /usr/bin/time -f "%c %w" -o /tmp/cli.time $(cli $v) $RDMALAB_ADDR > /tmp/cli.out 2>&1
    wait $spid
    echo "rep $rep $v: BW $(bw)  client ivcsw/vcsw $(cat /tmp/cli.time)"
  done
done
for v in c g; do
  server
  perf record -q -a -e sched:sched_switch -o /tmp/sw.data -- $(cli $v) $RDMALAB_ADDR > /tmp/cli.out 2>/tmp/rec.err
  wait $spid
  echo "=== $v under sched_switch: BW $(bw)"
  perf script -i /tmp/sw.data -F comm,tid,trace 2>/dev/null > /tmp/sw.txt
  echo "--- the client's threads preempted (prev_state=R), by the task that ran next"
  case $v in c) name=ib_$T;; g) name=rdmaperf;; esac
  grep "prev_comm=$name " /tmp/sw.txt | grep "prev_state=R" | sed 's/.*next_comm=\([^ ]*\) .*/\1/' | sed 's/[0-9/:]*$//' | sort | uniq -c | sort -rn | head
  echo "--- switches away from each client thread (tid: count, of which preempted)"
  grep "prev_comm=$name " /tmp/sw.txt | sed 's/.*prev_pid=\([0-9]*\) .*prev_state=\([A-Z+]*\).*/\1 \2/' | awk '{n[$1]++; if ($2=="R" || $2=="R+") r[$1]++} END {for (t in n) print "  " t ": " n[t] ", " r[t]+0}'
done
