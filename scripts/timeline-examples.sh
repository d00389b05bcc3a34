#!/usr/bin/env bash
# Makes the example timelines in docs/: one two-node lab boot in which
# `rdmaping --mode M` runs for each of send, write, read and atomic while
# `rdmatrace record` records rdmaping's calls and the RoCEv2 packets on both
# nodes. The recordings are kept in tools/timeline/testdata/examples/ and
# each pair is drawn with `rdmatrace timeline` into docs/timeline-M.html
# (TestDocsPages in tools/timeline checks each page is what its recordings
# draw today).
# Usage: scripts/timeline-examples.sh [--kernel 6.1|6.12]  (record and draw)
#        scripts/timeline-examples.sh --redraw              (draw the kept recordings again, no lab)
set -euo pipefail
cd "$(dirname "$0")/.."
modes="send write read atomic"
recs=tools/timeline/testdata/examples
out=out/timeline-examples
rm -rf "$out"
mkdir -p "$out"
CGO_ENABLED=0 go build -trimpath -o "$out/" ./cmd/rdmaping ./cmd/rdmatrace

if [[ ${1:-} != --redraw ]]; then
	# What each node runs: node 0 the rdmaping server, node 1 the client (-v),
	# each under rdmatrace record.
	cat >"$out/node.sh" <<'EOF'
set -eu
out=$1; shift
n=$RDMALAB_NODE
port=7480
for mode in "$@"; do
  port=$((port + 1))
  rec="$out/$mode.node$n.rec"
  "$out/rdmatrace" record -q -c rdmaping -i "$RDMALAB_NETDEV" --node "node$n" -o "$rec" 2>"$out/rec$n.err" &
  r=$!
  i=0
  until grep -q 'recording to' "$out/rec$n.err"; do
    i=$((i + 1)); [ $i -lt 600 ] || { cat "$out/rec$n.err"; exit 1; }
    sleep 0.2
  done
  if [ "$n" = 0 ]; then
    "$out/rdmaping" -s -a "$RDMALAB_ADDR" -p "$port" --mode "$mode" -C 2 -S 64 --timeout 120s
  else
    sleep 2
    i=0
    until "$out/rdmaping" -c -a "$RDMALAB_PEER" -p "$port" --mode "$mode" -C 2 -S 64 -v --timeout 120s; do
      i=$((i + 1)); [ $i -lt 20 ] || exit 1
      sleep 2
    done
  fi
  sleep 1
  kill -INT $r
  wait $r
  echo "== $mode: $(tail -1 "$out/rec$n.err")"
done
EOF
	go run ./cmd/rdmalab run --nodes 2 "$@" -- sh "$out/node.sh" "$PWD/$out" $modes
	mkdir -p "$recs"
	for mode in $modes; do
		cp "$out/$mode.node0.rec" "$out/$mode.node1.rec" "$recs/"
	done
fi
for mode in $modes; do
	"$out/rdmatrace" timeline "$recs/$mode.node0.rec" "$recs/$mode.node1.rec" -o "docs/timeline-$mode.html" \
		-title "rdmaping --mode $mode -C 2 -S 64: node1 (client) and node0 (server), RoCEv2 over rxe"
done
