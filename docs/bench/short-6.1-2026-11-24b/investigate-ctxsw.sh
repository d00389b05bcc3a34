#!/bin/sh
# One VM: send_bw 4 KiB and send_lat 2 B, rdmaperf under runtime settings
# (default; GOMAXPROCS=1; RDMAPERF_YIELD=0; both) vs perftest: bandwidth/latency and
# the context switches of both processes inside the measured loop (rdmaperf's
# counters) and over the whole client process (/usr/bin/time).
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/short-6.1-2026-11-24b/investigate-ctxsw.sh
d=$RDMALAB_DEV; p=/sys/class/infiniband/$d/ports/1
for f in $p/gids/*; do i=${f##*/}; g=$(cat $f 2>/dev/null); t=$(cat $p/gid_attrs/types/$i 2>/dev/null)
  case "$t/$g" in "RoCE v2/0000:0000:0000:0000:0000:ffff:"*) gid=$i; break;; esac
done
P=out/inv/rdmaperf
echo "nproc=$(nproc) kernel=$(uname -r)"
port=19600
run() { # label test size iters env tool-args...
  label=$1 test=$2 size=$3 n=$4 envs=$5; shift 5
  port=$((port+1))
  case $label in
    go*) S="env $envs $P $test -s $size -n $n -d $d -x $gid -p $port --json $*";;
    *) S="ib_$test -s $size -n $n -d $d -x $gid -p $port -F $*";;
  esac
  $S > /tmp/srv.out 2>&1 &
  spid=$!
  sleep 0.5
  /usr/bin/time -f "client process: %e s wall, %c ivcsw, %w vcsw" $S $RDMALAB_ADDR > /tmp/cli.out 2>/tmp/cli.time
  wait $spid
  printf "=== %-6s %-8s %5s B %-30s: " $label $test $size "$envs"
  case $label in
    go*) grep -oE '"(bw_average|t_typical_usec|vcsw|ivcsw|seconds)": *[0-9.]*' /tmp/cli.out | tr '\n' ' '; echo; echo "    server loop: $(grep -oE '"(vcsw|ivcsw|seconds)": *[0-9.]*' /tmp/srv.out | tr '\n' ' ')";;
    *) grep -E "^ +$size " /tmp/cli.out | tr -s ' '; grep -ih "r\^2" /tmp/cli.out /tmp/srv.out;;
  esac
  echo "    $(tail -1 /tmp/cli.time)"
}
for rep in 1 2 3; do
  run c send_bw 4096 4096 ""
  run go send_bw 4096 4096 ""
  run go1 send_bw 4096 4096 "GOMAXPROCS=1"
  run goy0 send_bw 4096 4096 "RDMAPERF_YIELD=0"
  run go1y0 send_bw 4096 4096 "GOMAXPROCS=1 RDMAPERF_YIELD=0"
done
for rep in 1 2 3; do
  run c send_lat 2 5000 ""
  run go send_lat 2 5000 ""
  run go1 send_lat 2 5000 "GOMAXPROCS=1"
  run goy0 send_lat 2 5000 "RDMAPERF_YIELD=0"
  run go1y0 send_lat 2 5000 "GOMAXPROCS=1 RDMAPERF_YIELD=0"
done
