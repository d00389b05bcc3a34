#!/bin/sh
# One VM: instructions each client's user space executes per 64 B round
# trip, counted by valgrind's callgrind (the host's valgrind, seen by the
# guest through the lab's root): c, rstream at polling_time 0; old and new,
# the rsocket test binary's bench client built before and after a change
# (PollTime 0, GODEBUG=asyncpreemptoff=1: callgrind asserts on the
# runtime's preemption signals). The server runs natively. Each client runs
# 200 and 1,200 round trips; the difference of the process's totals (all
# its threads) divided by 1,000 is the count per round trip. The Go
# client's total also holds its dial retries (it dials until the server
# listens) and both kinds spin a little before they sleep, so two runs
# differ by some hundreds of instructions per round trip.
#   (binaries as for syscalls.sh)
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --kernel 6.1 -- sh docs/bench/rsocket-quiet-2026-11-28/callgrind.sh
B=${INV_BIN:-out/inv}
cp $B/rsocket-old.test /tmp/old.test && cp $B/rsocket.test /tmp/new.test || exit 1
mount -t tmpfs quiet /etc/rdma && mkdir -p /etc/rdma/rsocket && echo 0 > /etc/rdma/rsocket/polling_time || exit 1
. docs/bench/rsocket-quiet-2026-11-28/pair.sh
port=20400
export GODEBUG=asyncpreemptoff=1
for I in 200 1200; do
for k in c old new; do
  port=$((port+1))
  start_pair $k $port $I
  valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out $cli > /tmp/cli.txt 2>/tmp/vg.err
  rc=$?
  unset RSOCKET_BENCH_CLIENT
  wait $sp
  echo "=== $k I=$I rc=$rc: $(grep -E '^custom' /tmp/cli.txt | tail -1)"
  grep -E "Collected" /tmp/vg.err
done
done
umount /etc/rdma
