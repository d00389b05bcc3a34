#!/bin/sh
# Two VMs: the kernel's rxe functions called during 300 ms of a 64 B round-trip run
# (function tracer, filter rxe_*, whole system: only this run uses rxe),
# rstream at both ends, then the Go bench peers ($INV_BIN/rsocket.test), into
# $INV_BIN/fn-{c,g}-node$N.txt (calls per function).
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 2 -- sh docs/bench/rsocket-sched-2026-11-28/rxe-functions.sh
B=${INV_BIN:-out/inv}
I=3000
port=20700
. "$(dirname "$0")/lib.sh"
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
for K in c g; do
	start_end $K $port $I
	sleep 2
	echo 0 > $T/tracing_on
	echo > $T/trace
	echo 16384 > $T/buffer_size_kb
	echo 'rxe_*' > $T/set_ftrace_filter
	echo function > $T/current_tracer
	echo 1 > $T/tracing_on
	sleep 0.3
	echo 0 > $T/tracing_on
	grep -v '^#' $T/trace | awk '{print $5}' | sort | uniq -c | sort -rn > $B/fn-$K-node$RDMALAB_NODE.txt
	echo nop > $T/current_tracer
	wait $p
	tail -1 /tmp/out.txt
	port=$((port+1))
done
