#!/bin/sh
# One VM under --icount: read_bw 4 KiB x 16,384, perftest's client (c) then
# rdmaperf's (g) against perftest's server; 0.6 s into each run, the client's
# threads (state, priority, nice, policy) and the scheduler entries
# (/proc/PID/sched) of the client, the server and ksoftirqd/0.
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 -- sh docs/bench/icount-6.1-2026-11-28/schedinfo.sh
. docs/bench/gap-6.1-2026-11-24/common.sh
cp out/inv/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf; S=4096; T=read_bw; port=19970; N=16384
for cli in c g; do
  port=$((port+1))
  ib_$T -s $S -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
  spid=$!; sleep 0.5
  if [ $cli = c ]; then ib_$T -s $S -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR > /tmp/cli.out 2>&1 & else $P $T --perftest -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR > /tmp/cli.out 2>&1 & fi
  cpid=$!
  sleep 0.6
  echo "=== client $cli pid $cpid"
  cat /proc/$cpid/autogroup; grep -E "^Threads|voluntary" /proc/$cpid/status
  for t in /proc/$cpid/task/*; do echo "task ${t##*/} $(cat $t/comm): $(awk '{print "state",$3,"prio",$18,"nice",$19,"policy",$41}' $t/stat)"; done
  grep -E "se.load.weight|policy|prio|nr_switches|nr_voluntary|nr_involuntary|se.vruntime|se.sum_exec" /proc/$cpid/sched
  echo "--- server $spid"; cat /proc/$spid/autogroup; grep -E "se.load.weight|policy|prio" /proc/$spid/sched
  echo "--- ksoftirqd"; k=$(pgrep -x ksoftirqd/0); grep -E "se.load.weight|policy|prio|se.vruntime" /proc/$k/sched
  wait $cpid; wait $spid
  echo "BW $(grep -E "^ +$S " /tmp/cli.out | tr -s ' ' | cut -d' ' -f5)"
done
