# lib.sh, sourced by the investigation scripts (here and in
# ../gap-6.1-2026-11-28-ftrace), in a lab guest.
#
# start_end KIND PORT ITERS [BIN] starts this node's end of rstream's 64 B
# round-trip test in the background (node 0 serves, node 1 is the client)
# and leaves its pid in p, its output in /tmp/out.txt. KIND c is rstream
# (the client waits a second for the server); g is the rsocket test
# binary's bench peer, BIN or $B/rsocket.test (its client dials again
# while refused).
start_end() {
	if [ "$RDMALAB_NODE" = 0 ]; then
		export RSOCKET_BENCH_SERVER="$RDMALAB_ADDR:$2 64 1 $3 false false" RSOCKET_BENCH_CLIENT=
	else
		export RSOCKET_BENCH_SERVER= RSOCKET_BENCH_CLIENT="$RDMALAB_PEER:$2 64 1 $3 false false"
	fi
	if [ "$1" = c ]; then
		if [ "$RDMALAB_NODE" = 0 ]; then
			rstream -S 64 -C 1 -I $3 -T b -p $2 -b $RDMALAB_ADDR > /tmp/out.txt 2>&1 &
		else
			sleep 1
			rstream -S 64 -C 1 -I $3 -T b -p $2 -s $RDMALAB_PEER > /tmp/out.txt 2>&1 &
		fi
	else
		${4:-$B/rsocket.test} > /tmp/out.txt 2>&1 &
	fi
	p=$!
}

# trace_threads PID SECONDS OUT records SECONDS of the scheduler's events
# (sched_switch, sched_wakeup) and the system call entries and exits of
# PID's threads with tracefs into OUT. With UPROBES naming a file of
# uprobes.sh and UPROBES_BIN the binary it was made from, the entries of
# the functions it lists are recorded too. It fails, saying so, when PID
# has ended already.
trace_threads() {
	if [ ! -d /proc/$1/task ]; then
		echo "trace_threads: process $1 has ended already: make its run longer" >&2
		return 1
	fi
	T=/sys/kernel/tracing
	[ -d $T/events ] || mount -t tracefs nodev $T
	echo 0 > $T/tracing_on
	echo > $T/trace
	echo 16384 > $T/buffer_size_kb
	ls /proc/$1/task | tr '\n' ' ' > $T/set_event_pid
	echo "threads of $1: $(cat $T/set_event_pid)"
	echo 'sched:sched_switch sched:sched_wakeup raw_syscalls:sys_enter raw_syscalls:sys_exit' > $T/set_event
	if [ -n "$UPROBES" ]; then
		bin=$(realpath $UPROBES_BIN)
		while read name off; do
			echo "p:rdmago/$name $bin:$off" >> $T/uprobe_events
		done < $UPROBES
		echo 1 > $T/events/rdmago/enable
	fi
	echo 1 > $T/tracing_on
	sleep $2
	echo 0 > $T/tracing_on
	cat $T/trace > $3
	echo > $T/set_event
	echo > $T/set_event_pid
	if [ -d $T/events/rdmago ]; then
		echo 0 > $T/events/rdmago/enable
		echo > $T/uprobe_events
	fi
}
