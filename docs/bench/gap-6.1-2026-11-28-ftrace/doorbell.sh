#!/bin/sh
# What the kernel does for a latency client's operations, perftest's
# ib_$TEST (c) against rdmaperf's (g), both against perftest's server,
# alternating $INV_TOOLS (c g c g; t is rdmaperf copied to the guest's
# tmpfs first, g runs it from the lab's share; a TOOL:MODE item sets
# transparent huge pages to MODE first, on every node): once a run is under way, 300 ms of
# function_graph on the uverbs and rxe functions below only (each closing
# line names its function and gives its time, children included, and
# every line its time stamp) into $INV_BIN/doorbell-$TOOL-$ROUND.txt, read
# with doorbell.py. One VM: the client's threads only (rxe runs the
# server's receive side inside the client's doorbell). Two VMs: node 0
# serves, node 1 runs the client and traces every context (the peer's
# packets arrive in softirqs). With INV_TRACE=sched, the client's threads'
# scheduler events and system calls instead (trace_threads of lib.sh, into
# $INV_BIN/sched-$TOOL-$ROUND.txt, read with ../rsocket-sched-2026-11-28/oncpu.py).
# With INV_TRACE=none, no tracer: the client node's interrupt, softirq,
# context-switch, rxe and netdev counters over each whole client run, into
# $INV_BIN/counts-$TOOL-$ROUND.txt (the client's threads' switches are
# gone by then: not counted).
#   go build -o out/inv/rdmaperf ./cmd/rdmaperf
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/gap-6.1-2026-11-28-ftrace/doorbell.sh
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 2 --env INV_TEST=read_lat -- sh docs/bench/gap-6.1-2026-11-28-ftrace/doorbell.sh
here=docs/bench/gap-6.1-2026-11-24
INV_ITERS=${INV_ITERS:-200000}
. $here/common.sh
. docs/bench/rsocket-sched-2026-11-28/lib.sh
B=${INV_BIN:-out/inv}
# thp MODE sets transparent huge pages (always, never) on this node.
thp() {
	echo $1 > /sys/kernel/mm/transparent_hugepage/enabled
	echo "THP now $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
}
[ -z "$INV_THP" ] || thp $INV_THP # e.g. never: Go's heap gets huge pages, C's malloc small ones
TEST=${INV_TEST:-send_lat}
S=${INV_SIZE:-2}
T=/sys/kernel/tracing
FUNCS="ksys_write ib_uverbs_write ib_uverbs_post_send rxe_post_send rxe_requester rxe_xmit_packet rxe_udp_encap_recv rxe_rcv rxe_responder rxe_completer rxe_cq_post"
server=$RDMALAB_ADDR
[ -n "$RDMALAB_PEER" ] && server=$RDMALAB_PEER
port=19950
# counts prints the node's interrupt, softirq and context-switch counters,
# one "name count" per line (summed over CPUs), to difference around the
# trace into $B/doorbell-$tool-$r.counts.
counts() {
	awk 'NR > 1 {n = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i; print "irq:" $1, n}' /proc/interrupts
	awk 'NR > 1 {n = 0; for (i = 2; i <= NF; i++) n += $i; print "softirq:" $1, n}' /proc/softirqs
	awk '$1 == "ctxt" || $1 == "intr" {print $1, $2}' /proc/stat
	for f in /sys/class/infiniband/$d/ports/1/hw_counters/*; do
		echo "rxe:${f##*/} $(cat $f)"
	done
	awk -F'[: ]+' 'NR > 2 && $2 != "lo" {print "net:" $2 ":rx_packets", $4; print "net:" $2 ":tx_packets", $12}' /proc/net/dev
	for t in /proc/$cpid/task/*; do
		awk -v t=${t##*/} '/^(voluntary|nonvoluntary)_ctxt_switches/ {print "thread" t ":" $1, $2}' $t/status
	done
}
r=0
for tool in ${INV_TOOLS:-c g c g}; do
	r=$((r+1))
	case $tool in *:*) thp ${tool#*:}; tool=${tool%%:*} ;; esac # TOOL:THP
	port=$((port+1))
	if [ -z "$RDMALAB_PEER" ] || [ "$RDMALAB_NODE" = 0 ]; then
		ib_$TEST -s $S -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
		spid=$!
		if [ -n "$RDMALAB_PEER" ]; then
			wait $spid || cat /tmp/srv.out
			continue
		fi
	fi
	sleep 1
	case $tool in
	c) ib_$TEST -s $S -n $N -d $d -x $gid -p $port -F $server > /tmp/cli.out 2>&1 & ;;
	g) $B/rdmaperf $TEST --perftest -s $S -n $N -d $d -x $gid -p $port $server > /tmp/cli.out 2>&1 & ;;
	t) [ -x /tmp/rdmaperf ] || cp $B/rdmaperf /tmp/rdmaperf
	   /tmp/rdmaperf $TEST --perftest -s $S -n $N -d $d -x $gid -p $port $server > /tmp/cli.out 2>&1 & ;;
	esac
	cpid=$!
	if [ "$INV_TRACE" = none ]; then
		# No tracer: the node's counters over the client's whole run.
		counts > /tmp/counts.before
		wait $cpid; crc=$?
		counts > /tmp/counts.after
		paste /tmp/counts.before /tmp/counts.after | awk '$4 != $2 {print "  " $1, $4 - $2}' > $B/counts-$tool-$r.txt
		echo "=== $r $tool rc=$crc $(grep -E "^ +$S " /tmp/cli.out)"
		[ -n "$RDMALAB_PEER" ] || wait $spid
		continue
	fi
	sleep 1.5
	if [ "$INV_TRACE" = sched ] && [ -d /proc/$cpid/task ]; then
		counts > /tmp/counts.before
		trace_threads $cpid 0.3 $B/sched-$tool-$r.txt
		counts > /tmp/counts.after
		paste /tmp/counts.before /tmp/counts.after | awk '$4 != $2 {print "  " $1, $4 - $2}' > $B/sched-$tool-$r.counts
	elif [ -d /proc/$cpid/task ]; then
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
		[ -n "$RDMALAB_PEER" ] || ls /proc/$cpid/task | tr '\n' ' ' > $T/set_ftrace_pid
		echo "functions: $(cat $T/set_ftrace_filter | tr '\n' ' ')"
		echo function_graph > $T/current_tracer
		echo 1 > $T/options/funcgraph-tail
		echo 1 > $T/options/funcgraph-abstime
		counts > /tmp/counts.before
		echo 1 > $T/tracing_on
		sleep 0.3
		echo 0 > $T/tracing_on
		counts > /tmp/counts.after
		paste /tmp/counts.before /tmp/counts.after | awk '$4 != $2 {print "  " $1, $4 - $2}' > $B/doorbell-$tool-$r.counts
		[ "$r" = 1 ] && awk 'NR > 1 && $1 ~ /^[0-9]+:$/ {print "  irq " $1, $NF}' /proc/interrupts >> $B/doorbell-$tool-$r.counts
		cat $T/trace > $B/doorbell-$tool-$r.txt
		echo nop > $T/current_tracer
		: > $T/set_ftrace_filter
		echo > $T/set_ftrace_pid
	else
		echo "=== $r $tool: client ended before the trace: make the run longer"
	fi
	wait $cpid; crc=$?
	[ -n "$RDMALAB_PEER" ] || wait $spid
	echo "=== $r $tool rc=$crc $(grep -E "^ +$S " /tmp/cli.out)"
	[ $crc = 0 ] || cat /tmp/cli.out
done
