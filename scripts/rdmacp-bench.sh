#!/usr/bin/env bash
# rdmacp throughput against ib_write_bw in the same boot, two lab VMs, and the
# peak RSS of both ends.
#   scripts/rdmacp-bench.sh [--reps N] [--kernel 6.12]
# In one boot, REPS times (default 3), alternating: ib_write_bw (1 MiB writes,
# 64 of them, node 1 -> node 0), then rdmacp sending a 64 MiB random file
# node 1 -> node 0 (the first repetition with CPU profiles of both ends).
# Then one 256 MiB transfer for the peak RSS. Prints lines starting "PERF",
# then the medians and the ratio rdmacp/ib_write_bw of the medians, with the
# range of the per-repetition ratios. Takes about 1 + REPS/2 minutes.
# Profiles: go tool pprof -top $DIR/rdmacp $DIR/send.prof (DIR is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
reps=3
if [ "${1:-}" = --reps ]; then
	reps=$2
	shift 2
fi
case $reps in
'' | *[!0-9]* | 0)
	echo "rdmacp-bench: --reps wants a positive number, not '$reps'" >&2
	exit 2
	;;
esac
scripts/deps.sh
dir=$(mktemp -d /var/tmp/rdmacp-bench.XXXXXX)
CGO_ENABLED=0 go build -o "$dir/rdmacp" ./cmd/rdmacp
cat >"$dir/guest.sh" <<'GUEST'
set -e
B=$(dirname "$0")
REPS=$1
SZ=1048576
if [ "$RDMALAB_NODE" = 0 ]; then
  for i in $(seq 1 "$REPS"); do
    ib_write_bw -d "$RDMALAB_DEV" -x 1 -F -p $((18516 + i)) -s $SZ -n 64 >/tmp/bw.txt 2>&1
    mkdir -p /tmp/r1
    prof=""
    [ "$i" = 1 ] && prof=$B/recv.prof
    RDMACP_CPUPROFILE=$prof $B/rdmacp recv --once --json -q --listen "$RDMALAB_ADDR:$((18620 + i))" /tmp/r1 | sed "s/^/PERF recv64 $i /"
    rm -rf /tmp/r1
  done
  mkdir -p /tmp/r2
  $B/rdmacp recv --once --json -q --listen "$RDMALAB_ADDR:18610" /tmp/r2 | sed 's/^/PERF recv256 /'
else
  head -c 64M /dev/urandom >/tmp/f64
  for i in $(seq 1 "$REPS"); do
    for t in 1 2 3 4 5 6 7 8 9 10; do sleep 1; ib_write_bw -d "$RDMALAB_DEV" -x 1 -F -p $((18516 + i)) -s $SZ -n 64 "$RDMALAB_PEER" >/tmp/bw.txt 2>&1 && break; done
    echo "PERF ib_write_bw $i $(grep -E "^ *$SZ " /tmp/bw.txt)"
    prof=""
    [ "$i" = 1 ] && prof=$B/send.prof
    RDMACP_CPUPROFILE=$prof $B/rdmacp send --json --wait 60s /tmp/f64 "$RDMALAB_PEER:$((18620 + i))" | sed "s/^/PERF send64 $i /"
  done
  rm /tmp/f64
  head -c 256M /dev/zero >/tmp/f256
  $B/rdmacp send --json --wait 60s /tmp/f256 "$RDMALAB_PEER:18610" | sed 's/^/PERF send256 /'
fi
GUEST
echo "rdmacp-bench: binaries and profiles in $dir"
go run ./cmd/rdmalab run --nodes 2 --share "$dir" --timeout 20m "$@" -- sh "$dir/guest.sh" "$reps" | tee "$dir/out.txt"
# Medians: ib_write_bw's "BW average" (MB/sec, MB = 2^20 B) and rdmacp's
# throughput_bytes_per_second from the sender's JSON, paired by repetition.
awk '
/^(node[0-9]\| )?PERF ib_write_bw / { sub(/^node[0-9]\| /, ""); bw[$3] = $7 }
/^(node[0-9]\| )?PERF send64 / {
	sub(/^node[0-9]\| /, "")
	if (match($0, /"throughput_bytes_per_second":[0-9.e+]+/)) cp[$3] = substr($0, RSTART + 30, RLENGTH - 30) / 1048576
}
function median(a, n,   i, j, t, v) {
	n = 0
	for (i in a) v[++n] = a[i]
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
END {
	n = 0; lo = 1e9; hi = 0
	for (i in cp) if (i in bw && bw[i] > 0) { r = cp[i] / bw[i]; if (r < lo) lo = r; if (r > hi) hi = r; n++ }
	if (n == 0) { print "rdmacp-bench: no paired results" > "/dev/stderr"; exit 1 }
	printf "RESULT ib_write_bw 1 MiB median %.2f MB/s; rdmacp 64 MiB median %.2f MB/s; ratio %.2f [%.2f-%.2f] over %d repetitions\n", median(bw), median(cp), median(cp) / median(bw), lo, hi, n
}' "$dir/out.txt"
