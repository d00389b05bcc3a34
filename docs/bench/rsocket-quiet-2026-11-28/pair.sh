# pair.sh, sourced by the scripts here and by ../rsocket-icount-6.1-2026-11-28/rtwork.sh,
# in a one-VM lab guest. start_pair KIND PORT ITERS starts the server of rstream's 64 B
# round-trip test (-S 64 -C 1 -T b) in the background (pid in sp) and leaves the
# client's command in cli: KIND c is rstream both ends; any other KIND is the rsocket
# test binary /tmp/KIND.test both ends (its bench peers, PollTime 0, the client's spec
# exported in RSOCKET_BENCH_CLIENT: unset it after the client ran).
start_pair() {
	if [ "$1" = c ]; then
		rstream -S 64 -C 1 -I $3 -T b -p $2 -b $RDMALAB_ADDR > /tmp/srv.txt 2>&1 &
		sp=$!
		cli="rstream -S 64 -C 1 -I $3 -T b -p $2 -s $RDMALAB_ADDR"
	else
		RSOCKET_BENCH_SERVER="$RDMALAB_ADDR:$2 64 1 $3 false false" /tmp/$1.test > /tmp/srv.txt 2>&1 &
		sp=$!
		cli=/tmp/$1.test
		export RSOCKET_BENCH_CLIENT="$RDMALAB_ADDR:$2 64 1 $3 false false"
	fi
	sleep 1
}
