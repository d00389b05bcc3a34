#!/bin/sh
# Two VMs: the Go runtime's execution trace of both Go ends of a 64 B
# round-trip run (RSOCKET_BENCH_TRACE), node 0 serving, node 1 the client,
# into $INV_BIN/trace-node0.out and trace-node1.out (the host's directory):
#   go test -c -o out/inv/rsocket.test ./rsocket
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 2 -- sh docs/bench/rsocket-wake-2026-11-28/gotrace.sh
#   go tool trace -d=parsed out/inv/trace-node1.out
B=${INV_BIN:-out/inv}
I=${INV_ITERS:-500}
port=19960
export RSOCKET_BENCH_TRACE=$B/trace-node$RDMALAB_NODE.out
if [ "$RDMALAB_NODE" = 0 ]; then
	export RSOCKET_BENCH_SERVER="$RDMALAB_ADDR:$port 64 1 $I false false"
else
	export RSOCKET_BENCH_CLIENT="$RDMALAB_PEER:$port 64 1 $I false false"
fi
$B/rsocket.test
