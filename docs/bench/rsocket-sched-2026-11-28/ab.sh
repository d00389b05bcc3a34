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
run() {
	if [ "$RDMALAB_NODE" = 0 ]; then
		export RSOCKET_BENCH_SERVER="$RDMALAB_ADDR:$2 64 1 $I false false" RSOCKET_BENCH_CLIENT=
	else
		export RSOCKET_BENCH_SERVER= RSOCKET_BENCH_CLIENT="$RDMALAB_PEER:$2 64 1 $I false false"
	fi
	case $1 in
	c) if [ "$RDMALAB_NODE" = 0 ]; then set -- rstream -S 64 -C 1 -I $I -T b -p $2 -b $RDMALAB_ADDR
	   else set -- rstream -S 64 -C 1 -I $I -T b -p $2 -s $RDMALAB_PEER; fi ;;
	o) set -- ${INV_OLD:-$B/rsocket-old.test} ;;
	n) set -- ${INV_NEW:-$B/rsocket.test} ;;
	esac
	n=0
	while :; do
		"$@" > /tmp/out.txt 2>&1 && return 0
		[ "$RDMALAB_NODE" = 0 ] || ! grep -q -i refused /tmp/out.txt && break
		n=$((n+1))
		[ $n -gt 100 ] && break
		sleep 0.2
	done
	echo "FAILED: $*"; sed 's/^/  | /' /tmp/out.txt
}
for r in $(seq $R); do
	for k in c o n n o c; do
		port=$((port+1))
		run $k $port
		[ "$RDMALAB_NODE" = 0 ] || echo "round $r $k $(awk '/^custom/ {print $NF}' /tmp/out.txt)"
	done
done
