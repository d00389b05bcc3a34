#!/bin/sh
# One VM: what the kernel does inside a latency client's doorbell write(2),
# perftest's ib_$TEST (c) against rdmaperf's (g), both against perftest's
# server, alternating $INV_TOOLS (c g c g): once a run is under way, 300 ms
# of function_graph on the uverbs and rxe functions below only (each
# closing line names its function and gives its time, children included),
# for the client's pid, into $INV_BIN/doorbell-$TOOL-$ROUND.txt, read with
# doorbell.py.
#   go build -o out/inv/rdmaperf ./cmd/rdmaperf
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/gap-6.1-2026-11-28-ftrace/doorbell.sh
here=docs/bench/gap-6.1-2026-11-24
INV_ITERS=${INV_ITERS:-200000}
. $here/common.sh
B=${INV_BIN:-out/inv}
TEST=${INV_TEST:-send_lat}
S=${INV_SIZE:-2}
T=/sys/kernel/tracing
FUNCS="ksys_write __schedule ib_uverbs_write ib_uverbs_post_send rxe_post_send rxe_requester rxe_xmit_packet rxe_rcv rxe_responder rxe_completer rxe_cq_post rxe_loopback copy_from_user _copy_from_user _copy_to_user __schedule"
port=19950
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
	if [ -d /proc/$cpid/task ]; then
		echo 0 > $T/tracing_on
		echo nop > $T/current_tracer
		echo > $T/trace
		echo 16384 > $T/buffer_size_kb
		: > $T/set_ftrace_filter
		for f in $FUNCS; do
			echo $f >> $T/set_ftrace_filter 2>/dev/null # the kernel refuses names it lacks
		done
		if ! grep -q rxe_requester $T/set_ftrace_filter; then
			echo "doorbell.sh: cannot trace rxe's functions (is rdma_rxe loaded?)" >&2
			exit 1
		fi
		ls /proc/$cpid/task | tr '\n' ' ' > $T/set_ftrace_pid
		echo "functions: $(cat $T/set_ftrace_filter | tr '\n' ' ')"
		echo function_graph > $T/current_tracer
		echo 1 > $T/options/funcgraph-tail
		echo 1 > $T/options/funcgraph-abstime
		echo 1 > $T/tracing_on
		sleep 0.3
		echo 0 > $T/tracing_on
		cat $T/trace > $B/doorbell-$tool-$r.txt
		echo nop > $T/current_tracer
		: > $T/set_ftrace_filter
		echo > $T/set_ftrace_pid
	else
		echo "=== $r $tool: client ended before the trace: make the run longer"
	fi
	wait $cpid; crc=$?
	wait $spid
	echo "=== $r $tool rc=$crc $(grep -E "^ +$S " /tmp/cli.out)"
	[ $crc = 0 ] || cat /tmp/cli.out
done
