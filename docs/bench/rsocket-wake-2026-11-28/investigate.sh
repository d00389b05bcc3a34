#!/bin/sh
# Two VMs: what does a Go rsocket end do per 64 B round trip that
# rstream's C end does not? rstream's latency test (-S 64 -C 1 -I
# $INV_ITERS -T b) between node 0's server and node 1's client, each end
# either rstream (c) or this package's bench peer alone in a process (g:
# the rsocket test binary with RSOCKET_BENCH_SERVER / _CLIENT, the peers
# BenchmarkLabRstream runs), every pairing, alternating, $INV_REPS rounds.
# Each pairing runs three times a round: timed (the client's usec/xfer;
# both ends' threads' CPU ticks and context switches from /proc, sampled
# every 0.1 s, last reading kept), with the server under `strace -f -c`,
# and with the client under it (system calls per round trip, all threads).
# Run:
#   go test -c -o out/inv/rsocket.test ./rsocket
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 2 -- sh docs/bench/rsocket-wake-2026-11-28/investigate.sh
me=docs/bench/rsocket-wake-2026-11-28
B=${INV_BIN:-out/inv}
I=${INV_ITERS:-1000}
R=${INV_REPS:-3}
port=19800
echo "kernel $(uname -r); clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource); vCPUs $(nproc); node $RDMALAB_NODE"
# cmd KIND PORT: the command line of this node's end.
cmd() {
	if [ "$RDMALAB_NODE" = 0 ]; then
		case $1 in
		c) echo "rstream -S 64 -C 1 -I $I -T b -p $2 -b $RDMALAB_ADDR" ;;
		g) echo "$B/rsocket.test" ;;
		esac
	else
		case $1 in
		c) echo "rstream -S 64 -C 1 -I $I -T b -p $2 -s $RDMALAB_PEER" ;;
		g) echo "$B/rsocket.test" ;;
		esac
	fi
}
# run KIND PORT STRACE: this node's end, once (a C client again while
# refused), under strace -f -c if STRACE is 1; output in /tmp/out.txt.
run() {
	c=$(cmd $1 $2)
	# The Go end's spec (ADDR SIZE COUNT ITERS POLL TCP), for either role.
	export RSOCKET_BENCH_SERVER="$RDMALAB_ADDR:$2 64 1 $I false false"
	export RSOCKET_BENCH_CLIENT=
	if [ "$RDMALAB_NODE" != 0 ]; then
		export RSOCKET_BENCH_SERVER= RSOCKET_BENCH_CLIENT="$RDMALAB_PEER:$2 64 1 $I false false"
	fi
	pre=
	[ "$3" = 1 ] && pre="strace -f -c -o /tmp/st.txt"
	n=0
	while :; do
		$pre $c > /tmp/out.txt 2>&1 &
		p=$!
		rm -f /tmp/snap.txt
		while kill -0 $p 2>/dev/null; do
			snap=$(sh $me/../gap-6.1-2026-11-25-threads/snap.sh $p)
			[ -n "$snap" ] && echo "$snap" > /tmp/snap.txt
			sleep 0.1
		done
		wait $p && return 0
		[ "$RDMALAB_NODE" = 0 ] || ! grep -q -i refused /tmp/out.txt && break
		n=$((n+1))
		[ $n -gt 100 ] && break
		sleep 0.2
	done
	echo "   FAILED: $c"
	sed 's/^/   | /' /tmp/out.txt
	return 1
}
side=server
[ "$RDMALAB_NODE" = 0 ] || side=client
for r in $(seq $R); do
	for pair in cc gg cg gc gc cg gg cc; do
		s=${pair%?} c=${pair#?}
		me_kind=$s
		[ "$RDMALAB_NODE" = 0 ] || me_kind=$c
		for how in time strace-server strace-client; do
			port=$((port+1))
			st=0
			[ "$how" = strace-$side ] && st=1
			run $me_kind $port $st
			echo "=== round $r client $c -> server $s ($how), $side $me_kind: $(grep -h -e '^custom' -e '^woke' /tmp/out.txt | tr '\n' ' ')"
			if [ $st = 1 ]; then
				grep -v -e '^%' -e '^---' -e 'total$' /tmp/st.txt | awk -v I=$I '{printf "   %-16s %8d  %.2f per round trip\n", $NF, $4, $4/I}'
			elif [ "$how" = time ]; then
				echo "   threads (tid, ticks, voluntary, involuntary):"
				sort -k2 -rn /tmp/snap.txt | sed 's/^/   /'
			fi
		done
	done
done
