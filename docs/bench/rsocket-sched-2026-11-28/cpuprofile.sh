#!/bin/sh
# Two VMs: Go's CPU profile of both Go ends of a 64 B round-trip run
# (RSOCKET_BENCH_CPUPROFILE), node 0 serving, node 1 the client, into
# $INV_BIN/cpu-node0.pprof and cpu-node1.pprof (the host's directory):
#   go test -c -o out/inv/rsocket.test ./rsocket
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 2 -- sh docs/bench/rsocket-sched-2026-11-28/cpuprofile.sh
#   go tool pprof -top out/inv/rsocket.test out/inv/cpu-node1.pprof
B=${INV_BIN:-out/inv}
I=${INV_ITERS:-8000}
port=19990
export RSOCKET_BENCH_CPUPROFILE=$B/cpu-node$RDMALAB_NODE.pprof
. "$(dirname "$0")/lib.sh"
start_end g $port $I
wait $p
cat /tmp/out.txt
