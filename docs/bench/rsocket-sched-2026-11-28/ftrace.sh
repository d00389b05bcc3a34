#!/bin/sh
# Two VMs: which thread of an rsocket end runs, sleeps and wakes whom,
# and where its time on the CPU goes, during 64 B round trips (rstream's
# -S 64 -C 1 -T b). Go ends are this package's bench peers alone in a
# process; node 0 serves, node 1 is the client. Once each run
# is under way each node records 200 ms of the kernel's scheduler events
# (sched_switch, sched_wakeup) and system call entries and exits of its
# process's threads with tracefs, into $INV_BIN/ftrace-$KIND-node$N.txt
# (host directory). INV_KIND lists what runs, one after the other in one
# boot: c (rstream at both ends), g (the Go peers); default "c g".
# oncpu.py splits each trace's time on the CPU. With INV_UPROBES naming a
# file of uprobes.sh, the Go runs also record entries of the functions it
# lists (uprobes on $INV_BIN/rsocket.test); critical.py reads them.
#   go test -c -o out/inv/rsocket.test ./rsocket
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 2 -- sh docs/bench/rsocket-sched-2026-11-28/ftrace.sh
B=${INV_BIN:-out/inv}
I=${INV_ITERS:-4000}
port=${INV_PORT:-19970}
. "$(dirname "$0")/lib.sh"
for K in ${INV_KIND:-c g}; do
	start_end $K $port $I
	sleep 2
	UPROBES= UPROBES_BIN=$B/rsocket.test
	[ "$K" = g ] && UPROBES=$INV_UPROBES
	trace_threads $p 0.2 $B/ftrace-$K-node$RDMALAB_NODE.txt
	wait $p
	echo "rc=$? $(cat /tmp/out.txt | tail -3)"
	wc -l $B/ftrace-$K-node$RDMALAB_NODE.txt
	port=$((port+1))
done
