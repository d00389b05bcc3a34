#!/usr/bin/env bash
# rdmacp throughput against ib_write_bw in the same boot, two lab VMs, and the
# peak RSS of both ends: a 64 MiB random file (with CPU profiles of both ends)
# and a 256 MiB file. Prints lines starting "PERF". Takes about 2 minutes.
#   scripts/rdmacp-bench.sh [--kernel 6.12]
# Profiles: go tool pprof -top $DIR/rdmacp $DIR/send.prof (DIR is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
dir=$(mktemp -d /var/tmp/rdmacp-bench.XXXXXX)
CGO_ENABLED=0 go build -o "$dir/rdmacp" ./cmd/rdmacp
cat >"$dir/guest.sh" <<'GUEST'
set -e
B=$(dirname "$0")
SZ=1048576
if [ "$RDMALAB_NODE" = 0 ]; then
  ib_write_bw -d "$RDMALAB_DEV" -x 1 -F -p 18516 -s $SZ -n 32 >/tmp/bw.txt 2>&1
  mkdir -p /tmp/r1 /tmp/r2
  RDMACP_CPUPROFILE=$B/recv.prof $B/rdmacp recv --once --json -q --listen "$RDMALAB_ADDR:18620" /tmp/r1 | sed 's/^/PERF recv64 /'
  rm -rf /tmp/r1
  $B/rdmacp recv --once --json -q --listen "$RDMALAB_ADDR:18621" /tmp/r2 | sed 's/^/PERF recv256 /'
else
  for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1; ib_write_bw -d "$RDMALAB_DEV" -x 1 -F -p 18516 -s $SZ -n 32 "$RDMALAB_PEER" >/tmp/bw.txt 2>&1 && break; done
  echo "PERF ib_write_bw $(grep -E "^ *$SZ " /tmp/bw.txt)"
  head -c 64M /dev/urandom >/tmp/f64
  RDMACP_CPUPROFILE=$B/send.prof $B/rdmacp send --json --wait 60s /tmp/f64 "$RDMALAB_PEER:18620" | sed 's/^/PERF send64 /'
  rm /tmp/f64
  head -c 256M /dev/zero >/tmp/f256
  $B/rdmacp send --json --wait 60s /tmp/f256 "$RDMALAB_PEER:18621" | sed 's/^/PERF send256 /'
fi
GUEST
echo "rdmacp-bench: binaries and profiles in $dir"
go run ./cmd/rdmalab run --nodes 2 --share "$dir" --timeout 10m "$@" -- sh "$dir/guest.sh"
