#!/usr/bin/env bash
# Package rsocket against rdma-core's rstream (librdmacm's rsockets in C)
# and TCP, in one boot of one lab node (rxe on a veth, both ends in the one
# VM): BenchmarkLabRstream runs rstream's custom test between every pairing
# (C-C, Go-Go, Go client to C server, C client to Go server, and TCP: rstream
# -T s, Go's net), alternating, REPS rounds (default 5): bandwidth, 32 MiB
# each way in 64 KiB transfers, and 500 round trips of 64 B. It prints every
# figure and a Markdown table of medians, ranges and ratios to rstream-to-
# rstream in the same boot (absolute figures mean little under emulation).
#   scripts/rsocket-bench.sh [--reps N] [--kernel 6.12]
set -euo pipefail
cd "$(dirname "$0")/.."
reps=5
if [ "${1:-}" = --reps ]; then
	reps=$2
	shift 2
fi
case $reps in
'' | *[!0-9]* | 0)
	echo "rsocket-bench: --reps wants a positive number, not '$reps'" >&2
	exit 2
	;;
esac
scripts/deps.sh
exec go run ./cmd/rdmalab test --nodes 1 -v -run '^$' \
	-args -test.bench='^BenchmarkLabRstream$' -args -test.benchtime="${reps}x" "$@" ./rsocket
