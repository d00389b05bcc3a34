#!/bin/sh
# One VM: the system calls of a Go rsocket end in steady state, round trip
# by round trip. The Go bench server (own process) serves rstream's latency
# client (-I $INV_ITERS); once the connection is up (its GID and device
# setup done), strace attaches to every thread of the server for 1 s; the
# trace is printed with the thread ids renamed by role.
# Run: go test -c -o out/inv/rsocket.test ./rsocket, then
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/rsocket-wake-2026-11-28/steady.sh
B=${INV_BIN:-out/inv}
I=${INV_ITERS:-20000}
port=19950
export RSOCKET_BENCH_SERVER="$RDMALAB_ADDR:$port 64 1 $I false false"
$B/rsocket.test > /tmp/srv.out 2>&1 &
spid=$!
sleep 2
rstream -S 64 -C 1 -I $I -T b -p $port -s $RDMALAB_ADDR > /tmp/cli.out 2>&1 &
cpid=$!
sleep 4
echo "threads of the server:"; for t in /proc/$spid/task/*; do echo "  ${t##*/} $(cat $t/comm) $(awk '/^voluntary_ctxt_switches/ {v=$2} /^nonvoluntary_ctxt_switches/ {n=$2} END {print v, n}' $t/status)"; done
timeout -s INT 1 strace -f -tt -p $spid -o /tmp/steady.txt
sleep 0.5
echo "--- calls in the 1 s window, by thread and call:"
sed -E 's/^([0-9]+) +[0-9:.]+ (<\.\.\. )?([a-z_0-9]+).*/\1 \3/' /tmp/steady.txt | grep -v -e '---' -e '+++' | sort | uniq -c | sort -rn | head -30
echo "--- the first 150 lines of the window (clock reads left out):"
grep -v clock_gettime /tmp/steady.txt | head -150
kill $cpid $spid 2>/dev/null
wait
