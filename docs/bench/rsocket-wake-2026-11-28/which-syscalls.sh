#!/bin/sh
# One VM: the Go bench server (own process) under a full `strace -f`
# against rstream's latency client (-I $INV_ITERS), then every system call
# it made more than a few times, with its arguments' first words, counted:
# what, if anything, enters the scheduler's system call path per round trip.
# Run: go test -c -o out/inv/rsocket.test ./rsocket, then
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/rsocket-wake-2026-11-28/which-syscalls.sh
B=${INV_BIN:-out/inv}
I=${INV_ITERS:-1000}
port=19900
export RSOCKET_BENCH_SERVER="$RDMALAB_ADDR:$port 64 1 $I false false"
strace -f -tt -o /tmp/full.txt $B/rsocket.test > /tmp/srv.out 2>&1 &
sleep 3
n=0
until rstream -S 64 -C 1 -I $I -T b -p $port -s $RDMALAB_ADDR > /tmp/cli.out 2>&1; do
	n=$((n+1)); [ $n -gt 50 ] && break; sleep 0.3
done
wait
cat /tmp/cli.out /tmp/srv.out
echo "--- calls by name and first argument, more than 20 times:"
sed -E 's/^[0-9]+ +[0-9:.]+ //; s/^(<\.\.\. )?([a-z_0-9]+)[ (]([^,)]*).*/\2 \3/' /tmp/full.txt | sort | uniq -c | sort -rn | awk '$1 > 20' | head -40
echo "--- openat paths:"
grep openat /tmp/full.txt | sed -E 's/.*openat\([^,]*, "([^"]*)".*/\1/' | sort | uniq -c | sort -rn | head -10
echo "--- a stretch of the trace near the end of the run (clock reads left out):"
grep -v clock_gettime /tmp/full.txt > /tmp/noclock.txt
total=$(wc -l < /tmp/noclock.txt)
sed -n "$((total*85/100)),$((total*85/100+90))p" /tmp/noclock.txt
