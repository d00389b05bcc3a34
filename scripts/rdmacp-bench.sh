#!/usr/bin/env bash
# rdmacp against the wire and its peers, in one boot of two lab VMs (node 1
# sends to node 0), and the peak RSS of both ends.
#   scripts/rdmacp-bench.sh [--reps N] [--kernel 6.12]
# A 64 MiB random file; REPS times (default 3), alternating, one after the
# other on the same wire:
#   ib_write_bw   1 MiB RDMA Writes (64 of them): the raw bandwidth
#   rdmacp        once per receiver --verify: crc32c (the default), sha256, none
#                 (the first crc32c repetition with CPU profiles of both ends)
#   rcopy         rdma-core's RDMA file copier (rsockets; verifies nothing)
#   TCP           nc over TCP on the same virtual wire: not RDMA, for reference
# Every copy is checked with sha256sum on the receiver against the source's.
# In the same boot: Go's SHA-256 and CRC32C rates on a guest vCPU (the
# standard library's own benchmarks), and one 256 MiB rdmacp transfer for the
# peak RSS of both ends. Prints lines starting "PERF", then "RESULT" lines:
# medians (MB = 2^20 bytes) and the issue's goals, met or not. Takes about
# 2 + 2×REPS minutes under emulation.
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
CGO_ENABLED=0 go test -c -o "$dir/sha256.test" crypto/sha256
CGO_ENABLED=0 go test -c -o "$dir/crc32.test" hash/crc32
cat >"$dir/guest.sh" <<'GUEST'
set -e
B=$(dirname "$0")
REPS=$1
SZ=1048576
MODES="crc32c sha256 none"
if [ "$RDMALAB_NODE" = 0 ]; then
  for i in $(seq 1 "$REPS"); do
    port=$((18600 + 10 * i))
    ib_write_bw -d "$RDMALAB_DEV" -x 1 -F -p $((18516 + i)) -s $SZ -n 64 >/tmp/bw.txt 2>&1
    for m in $MODES; do
      port=$((port + 1))
      mkdir -p /tmp/r
      prof=""
      [ "$i" = 1 ] && [ "$m" = crc32c ] && prof=$B/recv.prof
      RDMACP_CPUPROFILE=$prof $B/rdmacp recv --once --json -q --verify "$m" --listen "$RDMALAB_ADDR:$port" /tmp/r | sed "s/^/PERF recv $m $i /"
      echo "PERF check $m $i $(sha256sum /tmp/r/f64 | cut -d' ' -f1)"
      rm -rf /tmp/r
    done
    # rcopy's server serves forever: it is done with the copy when it
    # waits for the next connection.
    port=$((port + 1))
    rm -f /tmp/rc64
    rcopy -p "$port" >/tmp/rcopy.log 2>&1 &
    rc=$!
    n=0
    until [ "$(grep -o 'waiting for connection' /tmp/rcopy.log | wc -l)" -ge 2 ]; do
      n=$((n + 1)); [ $n -lt 6000 ] || { echo "rcopy server: no copy within 10 minutes"; cat /tmp/rcopy.log; exit 1; }
      sleep 0.1
    done
    kill "$rc"; wait "$rc" 2>/dev/null || true
    echo "PERF check rcopy $i $(sha256sum /tmp/rc64 | cut -d' ' -f1)"
    rm -f /tmp/rc64
    port=$((port + 1))
    nc.traditional -l -p "$port" >/tmp/nc64
    echo "PERF check tcp $i $(sha256sum /tmp/nc64 | cut -d' ' -f1)"
    rm -f /tmp/nc64
  done
  mkdir -p /tmp/r2
  $B/rdmacp recv --once --json -q --listen "$RDMALAB_ADDR:18599" /tmp/r2 | sed 's/^/PERF recv256 /'
  rm -rf /tmp/r2
else
  head -c 64M /dev/urandom >/tmp/f64
  echo "PERF source $(sha256sum /tmp/f64 | cut -d' ' -f1)"
  # Go's own rates on this vCPU, beside nothing else.
  $B/sha256.test -test.run XXX -test.bench 'Hash1M/New$' -test.benchtime 20x | grep -E '^Bench' | sed 's/^/PERF gosha256 /'
  $B/crc32.test -test.run XXX -test.bench 'CRC32/poly=Castagnoli/size=32kB/align=0$' -test.benchtime 2000x | grep -E '^Bench' | sed 's/^/PERF gocrc32c /'
  now() { date +%s.%N; }
  since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
  for i in $(seq 1 "$REPS"); do
    port=$((18600 + 10 * i))
    for t in $(seq 1 30); do sleep 1; ib_write_bw -d "$RDMALAB_DEV" -x 1 -F -p $((18516 + i)) -s $SZ -n 64 "$RDMALAB_PEER" >/tmp/bw.txt 2>&1 && break; done
    echo "PERF ib_write_bw $i $(grep -E "^ *$SZ " /tmp/bw.txt)"
    for m in $MODES; do
      port=$((port + 1))
      prof=""
      [ "$i" = 1 ] && [ "$m" = crc32c ] && prof=$B/send.prof
      RDMACP_CPUPROFILE=$prof $B/rdmacp send --json --wait 60s /tmp/f64 "$RDMALAB_PEER:$port" | sed "s/^/PERF send $m $i /"
    done
    # rcopy and nc: the wall clock of the copy that connected (the
    # attempts before the server listened are not counted).
    port=$((port + 1))
    ok=
    for t in $(seq 1 60); do
      sleep 1
      t0=$(now)
      if rcopy /tmp/f64 "$RDMALAB_PEER:/tmp/rc64" -p "$port" >/tmp/rcopy.out 2>&1; then ok=1; break; fi
    done
    [ -n "$ok" ] || { echo "rcopy failed:"; cat /tmp/rcopy.out; exit 1; }
    echo "PERF rcopy $i $(since "$t0")"
    port=$((port + 1))
    ok=
    for t in $(seq 1 60); do
      sleep 1
      t0=$(now)
      if nc.traditional -q 0 "$RDMALAB_PEER" "$port" </tmp/f64 2>/dev/null; then ok=1; break; fi
    done
    [ -n "$ok" ] || { echo "nc failed"; exit 1; }
    echo "PERF tcp $i $(since "$t0")"
  done
  rm /tmp/f64
  head -c 256M /dev/urandom >/tmp/f256
  $B/rdmacp send --json --wait 60s /tmp/f256 "$RDMALAB_PEER:18599" | sed 's/^/PERF send256 /'
  rm /tmp/f256
fi
GUEST
echo "rdmacp-bench: binaries and profiles in $dir"
go run ./cmd/rdmalab run --nodes 2 --share "$dir" --timeout 40m "$@" -- sh "$dir/guest.sh" "$reps" | tee "$dir/out.txt"
cat >"$dir/summary.awk" <<'AWK'
function median(a,   i, j, n, t, v) {
	n = 0
	for (i in a) v[++n] = a[i]
	if (n == 0) return 0
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function json(s, key,   re) {
	re = "\"" key "\":[0-9.e+]+"
	if (match(s, re)) return substr(s, RSTART + length(key) + 3, RLENGTH - length(key) - 3) + 0
	return -1
}
function rate(line) { if (match(line, /[0-9.]+ MB\/s/)) return substr(line, RSTART, RLENGTH - 5) / 1.048576; return 0 }
function verdict(ok) { return ok ? "met" : "NOT met" }
{ sub(/^node[0-9]\| /, "") }
/^PERF source / { src = $3 }
/^PERF gosha256 / { sha = rate($0) }
/^PERF gocrc32c / { crc = rate($0) }
/^PERF ib_write_bw / { bw[$3] = $7 }
/^PERF send [a-z0-9]+ [0-9]+ / { t = json($0, "throughput_bytes_per_second"); if (t > 0) cp[$3, $4] = t / 1048576; if ($0 !~ /"ok":true/) bad = bad " rdmacp-" $3 "-" $4 }
/^PERF (rcopy|tcp) / { if ($4 > 0) other[$2, $3] = 64 / $4 }
/^PERF check / { checks++; if ($5 != src) bad = bad " " $3 "-" $4 "(sha256sum differs)" }
/^PERF (send|recv)256 / { r = json($0, "peak_rss_bytes"); if (r > rss) rss = r; if ($0 !~ /"ok":true/) bad = bad " 256MiB" }
END {
	nm = split("crc32c sha256 none", modes, " ")
	for (k in bw) { b[k] = bw[k] }
	mb = median(b)
	printf "RESULT ib_write_bw 1 MiB writes     median %8.2f MB/s\n", mb
	for (i = 1; i <= nm; i++) {
		delete v; for (k in cp) { split(k, p, SUBSEP); if (p[1] == modes[i]) v[p[2]] = cp[k] }
		m[modes[i]] = median(v)
		printf "RESULT rdmacp --verify %-6s       median %8.2f MB/s  %.2f × ib_write_bw\n", modes[i], m[modes[i]], (mb > 0 ? m[modes[i]] / mb : 0)
	}
	split("rcopy tcp", others, " ")
	for (i = 1; i <= 2; i++) {
		delete v; for (k in other) { split(k, p, SUBSEP); if (p[1] == others[i]) v[p[2]] = other[k] }
		o[others[i]] = median(v)
	}
	printf "RESULT rcopy (rsockets, no check)  median %8.2f MB/s\n", o["rcopy"]
	printf "RESULT TCP (nc, not RDMA)          median %8.2f MB/s\n", o["tcp"]
	printf "RESULT guest vCPU: Go SHA-256 %.2f MB/s, Go CRC32C %.2f MB/s\n", sha, crc
	printf "RESULT peak RSS of either end, 256 MiB file: %.1f MiB\n", rss / 1048576
	printf "GOAL crc32c >= 0.9 × ib_write_bw: %.2f, %s\n", (mb > 0 ? m["crc32c"] / mb : 0), verdict(m["crc32c"] >= 0.9 * mb)
	lim = (sha > 0 && sha < mb) ? sha : mb
	printf "GOAL sha256 >= 0.9 × min(ib_write_bw, Go SHA-256) = %.2f MB/s: %.2f, %s\n", 0.9 * lim, (lim > 0 ? m["sha256"] / lim : 0), verdict(m["sha256"] >= 0.9 * lim)
	for (i = 1; i <= nm; i++) printf "GOAL %s >= 1.5 × rcopy: %.2f, %s\n", modes[i], (o["rcopy"] > 0 ? m[modes[i]] / o["rcopy"] : 0), verdict(m[modes[i]] >= 1.5 * o["rcopy"])
	printf "GOAL peak RSS < 64 MiB: %.1f MiB, %s\n", rss / 1048576, verdict(rss > 0 && rss < 64 * 1048576)
	if (checks == 0 || bad != "") { printf "rdmacp-bench: FAILED checks:%s (%d sha256sum checks)\n", bad, checks > "/dev/stderr"; exit 1 }
	printf "RESULT every copy matched the source's sha256sum (%d checks)\n", checks
}
AWK
awk -f "$dir/summary.awk" "$dir/out.txt"
