#!/usr/bin/env bash
# Package rsocket against rdma-core's rstream (librdmacm's rsockets in C)
# and TCP, in one boot: BenchmarkLabRstream runs rstream's custom test
# between every pairing (C-C, Go-Go, Go client to C server, C client to Go
# server, each Go end also polling 10 µs, TCP: rstream -T s and Go's net,
# C-C with librdmacm's polling_time 0, and on one node Go-Go with the Go
# server in a process of its own), alternating, REPS rounds (default 5):
# bandwidth in 64 KiB and in 1 MiB transfers, and 64 B round trips.
#   --nodes 1 (default): one lab VM, rxe looping back, both ends in it;
#     32 MiB each way per bandwidth run, 1,000 round trips.
#   --nodes 2: server on node 0, client on node 1, over the emulated wire
#     between the two VMs; 16 MiB each way, 1,000 round trips.
# The client's node prints every figure and a Markdown table of medians,
# ranges and ratios to rstream-to-rstream in the same boot (absolute
# figures mean little under emulation).
#   scripts/rsocket-bench.sh [--reps N] [--nodes 1|2] [--kernel 6.12] [rdmalab test flags]
set -euo pipefail
cd "$(dirname "$0")/.."
reps=5 nodes=1
while [ $# -gt 0 ]; do
	case $1 in
	--reps)
		reps=${2:-}
		shift 2
		;;
	--nodes)
		nodes=${2:-}
		shift 2
		;;
	*) break ;;
	esac
done
case $reps in
'' | *[!0-9]* | 0)
	echo "rsocket-bench: --reps wants a positive number, not '$reps'" >&2
	exit 2
	;;
esac
case $nodes in
1 | 2) ;;
*)
	echo "rsocket-bench: --nodes wants 1 or 2, not '$nodes'" >&2
	exit 2
	;;
esac
scripts/deps.sh
exec go run ./cmd/rdmalab test --nodes "$nodes" --timeout 40m -v -run '^$' \
	-args -test.bench='^BenchmarkLabRstream$' -args -test.benchtime="${reps}x" "$@" ./rsocket
