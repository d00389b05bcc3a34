# pair.sh, sourced by this directory's scripts: start_end KIND PORT ITERS
# starts this node's end of rstream's 64 B round-trip test in the
# background (node 0 serves, node 1 is the client) and leaves its pid in
# p, its output in /tmp/out.txt. KIND c is rstream (the client waits a
# second for the server); g is the rsocket test binary's bench peer
# ($B/rsocket.test; its client dials again while refused).
start_end() {
	if [ "$RDMALAB_NODE" = 0 ]; then
		export RSOCKET_BENCH_SERVER="$RDMALAB_ADDR:$2 64 1 $3 false false"
	else
		export RSOCKET_BENCH_CLIENT="$RDMALAB_PEER:$2 64 1 $3 false false"
	fi
	if [ "$1" = c ]; then
		if [ "$RDMALAB_NODE" = 0 ]; then
			rstream -S 64 -C 1 -I $3 -T b -p $2 -b $RDMALAB_ADDR > /tmp/out.txt 2>&1 &
		else
			sleep 1
			rstream -S 64 -C 1 -I $3 -T b -p $2 -s $RDMALAB_PEER > /tmp/out.txt 2>&1 &
		fi
	else
		$B/rsocket.test > /tmp/out.txt 2>&1 &
	fi
	p=$!
}
