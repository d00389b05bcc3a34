#!/bin/sh
# Two VMs, one boot: rstream's 64 B latency test (-S 64 -C 1 -I $INV_ITERS
# -T b) with both ends rstream (c) or both ends the rsocket test binary's
# bench peers built before (o: $INV_OLD, default $INV_BIN/rsocket-old.test)
# and after (n: $INV_NEW, default $INV_BIN/rsocket.test) a change,
# alternating c o n n o c, $INV_REPS rounds; prints the client's usec/xfer
# (rstream's figure: half a round trip) of each run.
#   git stash; go test -c -o out/inv/rsocket-old.test ./rsocket; git stash pop
#   go test -c -o out/inv/rsocket.test ./rsocket
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 2 -- sh docs/bench/rsocket-sched-2026-11-28/ab.sh
B=${INV_BIN:-out/inv}
I=${INV_ITERS:-2000}
R=${INV_REPS:-4}
port=20100
. "$(dirname "$0")/lib.sh"
run() {
	case $1 in
	c) start_end c $2 $I ;;
	o) start_end g $2 $I ${INV_OLD:-$B/rsocket-old.test} ;;
	n) start_end g $2 $I ${INV_NEW:-$B/rsocket.test} ;;
	esac
	wait $p || { echo "FAILED: $1"; sed 's/^/  | /' /tmp/out.txt; }
}
for r in $(seq $R); do
	for k in c o n n o c; do
		port=$((port+1))
		run $k $port
		[ "$RDMALAB_NODE" = 0 ] || echo "round $r $k $(awk '/^custom/ {print $NF}' /tmp/out.txt)"
	done
done
