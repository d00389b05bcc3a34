#!/bin/sh
# Copyright 2026 The rdmago Authors.
#
# overhead.sh measures what tracing costs rdmaperf write_bw: server and
# client on one lab node (rxe loopback), run without rdmatrace ("plain"),
# with rdmatrace --summary ("summary": the default rxe counters, fentry
# programs since nothing moves when it attaches), with --summary
# --rxe-kprobes (the same counters as kprobes, what rdmatrace takes when it
# attaches while QPs are active: "kprobes"), with --summary --rxe-all
# --rxe-kprobes (every rxe counter as a kprobe, the default before 2026-11:
# "all") and with rdmatrace printing every event (default probes, no
# filter: "lines"), in rotating order, REPS times; it prints every run's
# client BW average and each mode's median and ratio to the plain median,
# and the spread of the ratios within each repetition (a mode's run over
# the plain run of the same repetition: min, median, max).
# A measurement, not a test: nothing is asserted.
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
	echo "  [$(wc -l <"$work/trace.out") lines of rdmatrace $*; $(grep -c skipped "$work/trace.err" || true) probes skipped; $(grep -o 'rxe counters: [^(]*' "$work/trace.err" | head -1)]" >&2
}

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

echo "kernel $(uname -r), $(nproc) CPUs, write_bw -s $size -D $sec, $reps repetitions"
modes="plain summary kprobes all lines"
for m in $modes; do : >"$work/$m"; done
for r in $(seq 1 "$reps"); do
	# Rotate the order by one mode per repetition.
	order=$(echo $modes $modes | awk -v k=$(((r - 1) % 5)) '{for (i = k + 1; i <= k + 5; i++) printf "%s ", $i}')
	for m in $order; do
		case $m in
		plain) v=$(bw) ;;
		summary) v=$(traced --summary) ;;
		kprobes) v=$(traced --summary --rxe-kprobes) ;;
		all) v=$(traced --summary --rxe-all --rxe-kprobes) ;;
		lines) v=$(traced) ;;
		esac
		echo "rep $r $m $v MiB/s"
		echo "$v" >>"$work/$m"
		eval "v_$m=$v"
	done
	for m in summary kprobes all lines; do
		eval "echo \$v_$m" | awk -v b="$v_plain" '{printf "%.4f\n", $1 / b}' >>"$work/$m.ratio"
	done
done
p=$(median <"$work/plain")
for m in $modes; do
	v=$(median <"$work/$m")
	spread=""
	if [ -f "$work/$m.ratio" ]; then
		spread=$(sort -g "$work/$m.ratio" | awk '{v[NR]=$1} END {printf "; per-rep ratio min %.2f median %.2f max %.2f", v[1], (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2), v[NR]}')
	fi
	echo "median $m $v MiB/s ratio $(awk -v a="$v" -v b="$p" 'BEGIN {printf "%.3f", a / b}')$spread"
done
rm -rf "$work"
