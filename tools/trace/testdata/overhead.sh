#!/bin/sh
# Copyright 2026 The rdmago Authors.
#
# overhead.sh measures what tracing costs rdmaperf write_bw: server and
# client on one lab node (rxe loopback), run without rdmatrace, with
# rdmatrace --summary and with rdmatrace printing every event (all probes,
# rxe included, no filter), in rotating order, REPS times; it prints every
# run's client BW average and each mode's median and ratio to the plain
# median. A measurement, not a test: nothing is asserted.
#
# From the repository root on the host (builds the two commands with
# CGO_ENABLED=0, boots one lab node, runs this script there):
#
#	sh tools/trace/testdata/overhead.sh [--kernel 6.12] [REPS [SEC [SIZE]]]
#
# Defaults: 5 repetitions of 3 s runs of 65536-byte messages.
set -eu

if [ -z "${RDMALAB_NODE:-}" ]; then
	kernel=6.1
	if [ "${1:-}" = "--kernel" ]; then kernel=$2; shift 2; fi
	bin=$(mktemp -d)
	trap 'rm -rf "$bin"' EXIT
	CGO_ENABLED=0 go build -o "$bin/" ./cmd/rdmaperf ./cmd/rdmatrace
	go run ./cmd/rdmalab run --kernel "$kernel" --share "$bin" --env "OVERHEAD_BIN=$bin" \
		-- sh tools/trace/testdata/overhead.sh "$@"
	exit
fi

reps=${1:-5}
sec=${2:-3}
size=${3:-65536}
bin=$OVERHEAD_BIN
work=$(mktemp -d)
port=18515

# bw runs one server+client pair and prints the client's BW average (MiB/s).
bw() {
	port=$((port + 1))
	"$bin/rdmaperf" write_bw -s "$size" -D "$sec" -p "$port" >"$work/server" 2>&1 &
	spid=$!
	i=0
	until "$bin/rdmaperf" write_bw -s "$size" -D "$sec" -p "$port" --json "$RDMALAB_ADDR" >"$work/client" 2>"$work/client.err"; do
		i=$((i + 1))
		if [ $i -ge 20 ]; then
			cat "$work/client.err" "$work/server" >&2
			kill $spid
			return 1
		fi
		sleep 1
	done
	wait $spid
	grep -o '"bw_average": *[0-9.e+]*' "$work/client" | head -1 | sed 's/.*: *//'
}

# traced runs bw under rdmatrace with the given flags.
traced() {
	"$bin/rdmatrace" "$@" >"$work/trace.out" 2>"$work/trace.err" &
	tpid=$!
	i=0
	until grep -q "rdmatrace: tracing" "$work/trace.err"; do
		i=$((i + 1))
		if [ $i -ge 300 ]; then
			cat "$work/trace.err" >&2
			return 1
		fi
		sleep 0.2
	done
	r=$(bw)
	kill -TERM $tpid
	wait $tpid || true
	echo "$r"
	echo "  [$(wc -l <"$work/trace.out") lines of rdmatrace $*; $(grep -c skipped "$work/trace.err" || true) probes skipped]" >&2
}

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

echo "kernel $(uname -r), $(nproc) CPUs, write_bw -s $size -D $sec, $reps repetitions"
: >"$work/plain"
: >"$work/summary"
: >"$work/lines"
for r in $(seq 1 "$reps"); do
	case $((r % 3)) in
	1) order="plain summary lines" ;;
	2) order="summary lines plain" ;;
	0) order="lines plain summary" ;;
	esac
	for m in $order; do
		case $m in
		plain) v=$(bw) ;;
		summary) v=$(traced --summary) ;;
		lines) v=$(traced) ;;
		esac
		echo "rep $r $m $v MiB/s"
		echo "$v" >>"$work/$m"
	done
done
p=$(median <"$work/plain")
for m in plain summary lines; do
	v=$(median <"$work/$m")
	echo "median $m $v MiB/s ratio $(awk -v a="$v" -v b="$p" 'BEGIN {printf "%.3f", a / b}')"
done
rm -rf "$work"
