#!/bin/sh
# One VM: where a latency client's time goes, perftest's ib_$TEST (c)
# against rdmaperf's (g), both against perftest's server, alternating
# c g c g: once a run is under way, 200 ms of the client's threads traced
# with tracefs (trace_threads of docs/bench/rsocket-sched-2026-11-28/lib.sh)
# into $INV_BIN/ftrace-lat-$TOOL-$ROUND.txt (host directory), read with
# docs/bench/rsocket-sched-2026-11-28/oncpu.py.
#   go build -o out/inv/rdmaperf ./cmd/rdmaperf
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/gap-6.1-2026-11-28-ftrace/ftrace-lat.sh
here=docs/bench/gap-6.1-2026-11-24
INV_ITERS=${INV_ITERS:-200000} # long enough to be running 2 s in: 13-28 µs each
. $here/common.sh
. docs/bench/rsocket-sched-2026-11-28/lib.sh
B=${INV_BIN:-out/inv}
TEST=${INV_TEST:-send_lat}
S=${INV_SIZE:-2}
port=19900
r=0
for tool in ${INV_TOOLS:-c g c g}; do
	r=$((r+1))
	port=$((port+1))
	ib_$TEST -s $S -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
	spid=$!
	sleep 0.5
	case $tool in
	c) ib_$TEST -s $S -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR > /tmp/cli.out 2>&1 & ;;
	g) $B/rdmaperf $TEST --perftest -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR > /tmp/cli.out 2>&1 & ;;
	esac
	cpid=$!
	sleep 1.5
	trace_threads $cpid 0.2 $B/ftrace-lat-$tool-$r.txt || echo "=== $r $tool: not traced"
	wait $cpid; crc=$?
	wait $spid
	echo "=== $r $tool rc=$crc $(grep -E "^ +$S " /tmp/cli.out)"
	[ $crc = 0 ] || cat /tmp/cli.out
done
