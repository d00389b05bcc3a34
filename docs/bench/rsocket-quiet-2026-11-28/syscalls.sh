#!/bin/sh
# One VM (run it under the instruction clock: rdmalab run --icount): system
# calls per 64 B round trip, both ends together, counted system-wide with
# the syscalls:sys_enter_* tracepoints (perf stat -a: nothing is stopped or
# slowed), for each pair: c, rstream both ends at librdmacm's polling_time
# 0 (they sleep at once, as Go's ends do by default); old and new, the
# rsocket test binary's bench peers (PollTime 0, client and server each a
# process of its own) built before and after a change. Each runs 200 and
# 2,200 round trips, $INV_REPS times; syscalls.py subtracts and divides by
# 2,000, so set-up and teardown cancel.
#   git worktree add /tmp/before REV && (cd /tmp/before && go test -c -o $PWD/out/inv/rsocket-old.test ./rsocket)
#   go test -c -o out/inv/rsocket.test ./rsocket
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 -- sh docs/bench/rsocket-quiet-2026-11-28/syscalls.sh > out/inv/syscalls.log
#   python3 docs/bench/rsocket-quiet-2026-11-28/syscalls.py out/inv/syscalls.log
B=${INV_BIN:-out/inv}
cp $B/rsocket-old.test /tmp/old.test && cp $B/rsocket.test /tmp/new.test || exit 1
mount -t tmpfs quiet /etc/rdma && mkdir -p /etc/rdma/rsocket && echo 0 > /etc/rdma/rsocket/polling_time || exit 1
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
echo -1 > /proc/sys/kernel/perf_event_paranoid
. docs/bench/rsocket-quiet-2026-11-28/pair.sh
port=20500
for rep in $(seq ${INV_REPS:-2}); do
for I in 200 2200; do
for k in c old new; do
  port=$((port+1))
  start_pair $k $port $I
  perf stat -a -x, -e 'syscalls:sys_enter_*' -o /tmp/ps.txt -- $cli > /tmp/cli.txt 2>&1
  unset RSOCKET_BENCH_CLIENT
  wait $sp
  echo "=== $k I=$I: $(grep -E '^custom' /tmp/cli.txt | tail -1)"
  grep -v '^#' /tmp/ps.txt | grep . | awk -F, '$1>0{print $1, $3}' | sort -rn | head -20
done
done
done
umount /etc/rdma
