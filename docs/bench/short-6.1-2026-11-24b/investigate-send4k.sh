#!/bin/sh
# One VM, send_bw and write_bw 4 KiB: which side makes the gap? Every pairing
# of client and server across the two tools (rdmaperf speaks perftest's
# exchange with --perftest), three rounds, the client's table line
# (bytes, iterations, BW peak, BW average, Mpps) and its in-loop counters.
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/short-6.1-2026-11-24b/investigate-send4k.sh
d=$RDMALAB_DEV; p=/sys/class/infiniband/$d/ports/1
for f in $p/gids/*; do i=${f##*/}; g=$(cat $f 2>/dev/null); t=$(cat $p/gid_attrs/types/$i 2>/dev/null)
  case "$t/$g" in "RoCE v2/0000:0000:0000:0000:0000:ffff:"*) gid=$i; break;; esac
done
P=out/inv/rdmaperf
port=19700
cmd() { # tool test
  case $1 in
    go) echo "$P $2 --perftest -s 4096 -n 4096 -d $d -x $gid -p $port";;
    c) echo "ib_$2 -s 4096 -n 4096 -d $d -x $gid -p $port -F";;
  esac
}
run() { # client-tool server-tool test
  port=$((port+1))
  $(cmd $2 $3) > /tmp/srv.out 2>&1 &
  spid=$!
  sleep 0.5
  /usr/bin/time -f "%U user %S sys %c ivcsw %w vcsw" $(cmd $1 $3) $RDMALAB_ADDR > /tmp/cli.out 2>/tmp/cli.time
  wait $spid
  printf "=== %-8s client %-3s server %-3s: %s   (client process: %s)\n" $3 $1 $2 "$(grep -E '^ +4096 ' /tmp/cli.out | tr -s ' ')" "$(tail -1 /tmp/cli.time)"
  grep -ih "r\^2" /tmp/cli.out /tmp/srv.out
}
for rep in 1 2 3; do
  for t in send_bw write_bw; do
    run c c $t; run go c $t; run c go $t; run go go $t
  done
done
