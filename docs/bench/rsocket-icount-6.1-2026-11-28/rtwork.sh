#!/bin/sh
# One VM under the instruction clock (rdmalab run --icount): where the
# work of a 64 B round trip goes, both ends sleeping at once: rstream with
# librdmacm's polling_time 0 (c) against the rsocket test binary's bench
# peers, server and client each a process of its own (g), alternating
# c g c g, $INV_ITERS round trips each (rstream -S 64 -C 1 -T b). Each run is
# recorded system-wide (perf record -a, cpu-clock at 10 kHz of the guest's
# instruction time: one sample per 100,000 guest instructions); printed:
# the client's usec/xfer, the samples per command and per DSO (kernel or
# user), the top symbols, and the top symbols of user space.
# Run: go test -c -o out/inv/rsocket.test ./rsocket &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 -- sh docs/bench/rsocket-icount-6.1-2026-11-28/rtwork.sh
B=${INV_BIN:-out/inv}
I=${INV_ITERS:-5000}
cp $B/rsocket.test /tmp/g.test
mount -t tmpfs rtwork /etc/rdma && mkdir -p /etc/rdma/rsocket && echo 0 > /etc/rdma/rsocket/polling_time || exit 1
echo "polling_time $(cat /etc/rdma/rsocket/polling_time)"
. docs/bench/rsocket-quiet-2026-11-28/pair.sh
port=20300
for k in c g c g; do
  port=$((port+1))
  start_pair $k $port $I
  perf record -q -a -F 10000 -o /tmp/perf.data -- $cli > /tmp/cli.txt 2>/tmp/rec.err
  unset RSOCKET_BENCH_CLIENT
  wait $sp
  echo "=== $k: $(grep -E '^custom' /tmp/cli.txt | tail -1)"
  perf report -i /tmp/perf.data -n --sort comm --stdio 2>/dev/null | grep -E '^#.*Samples|^ +[0-9]' | head -8
  perf report -i /tmp/perf.data -n --sort comm,dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -8
  echo "--- top symbols"
  perf report -i /tmp/perf.data -n --sort comm,sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -40
  echo "--- the client's and server's user space: top symbols"
  perf report -i /tmp/perf.data -n --sort dso,sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | grep -v -e '\[kernel' -e '\[k\]' | head -45
done
umount /etc/rdma
