#!/bin/sh
# One VM, write_bw and send_bw 4 KiB against perftest's server: the client
# process's user and system CPU time at 4,096 and 40,960 iterations, for
# perftest's client and rdmaperf's (--perftest). The difference over the
# 36,864 extra posts is each tool's CPU time per post, setup cancelled out.
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/short-6.1-2026-11-24b/investigate-perpost.sh
d=$RDMALAB_DEV; p=/sys/class/infiniband/$d/ports/1
for f in $p/gids/*; do i=${f##*/}; g=$(cat $f 2>/dev/null); t=$(cat $p/gid_attrs/types/$i 2>/dev/null)
  case "$t/$g" in "RoCE v2/0000:0000:0000:0000:0000:ffff:"*) gid=$i; break;; esac
done
P=out/inv/rdmaperf
port=19900
run() { # tool test iters
  port=$((port+1))
  ib_$2 -s 4096 -n $3 -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
  spid=$!
  sleep 0.5
  case $1 in
    go) C="$P $2 --perftest -s 4096 -n $3 -d $d -x $gid -p $port";;
    c) C="ib_$2 -s 4096 -n $3 -d $d -x $gid -p $port -F";;
  esac
  /usr/bin/time -f "%e %U %S %c %w" $C $RDMALAB_ADDR > /tmp/cli.out 2>/tmp/cli.time
  wait $spid
  # test tool iters wall user sys ivcsw vcsw bw_average
  echo "=== $2 $1 $3 $(tail -1 /tmp/cli.time) $(grep -E '^ +4096 ' /tmp/cli.out | tr -s ' ' | cut -d' ' -f5)"
}
for rep in 1 2; do
  for t in write_bw send_bw; do
    for tool in c go; do run $tool $t 4096; run $tool $t 40960; done
  done
done
