#!/bin/sh
# One VM, write_bw and send_bw 4 KiB against perftest's server: perftest's
# client, rdmaperf's (one P, its default since loopProcs) and rdmaperf's
# with GOMAXPROCS=2; the client process's CPU time and context switches;
# and whether the guest runs with page-table isolation (every system call
# then switches page tables, which TCG's software TLB pays for on return).
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/short-6.1-2026-11-24b/investigate-client.sh
d=$RDMALAB_DEV; p=/sys/class/infiniband/$d/ports/1
for f in $p/gids/*; do i=${f##*/}; g=$(cat $f 2>/dev/null); t=$(cat $p/gid_attrs/types/$i 2>/dev/null)
  case "$t/$g" in "RoCE v2/0000:0000:0000:0000:0000:ffff:"*) gid=$i; break;; esac
done
echo "meltdown: $(cat /sys/devices/system/cpu/vulnerabilities/meltdown); cmdline: $(cat /proc/cmdline)"
grep -o -w -E 'pcid|invpcid' /proc/cpuinfo | sort | uniq -c
P=out/inv/rdmaperf
port=19800
run() { # label env test
  port=$((port+1))
  ib_$3 -s 4096 -n 4096 -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
  spid=$!
  sleep 0.5
  case $1 in
    go*) C="env $2 $P $3 --perftest -s 4096 -n 4096 -d $d -x $gid -p $port";;
    c) C="ib_$3 -s 4096 -n 4096 -d $d -x $gid -p $port -F";;
  esac
  /usr/bin/time -f "%U user %S sys %c ivcsw %w vcsw" $C $RDMALAB_ADDR > /tmp/cli.out 2>/tmp/cli.time
  wait $spid
  printf "=== %-8s client %-4s %-12s: %s   (client process: %s)\n" $3 $1 "$2" "$(grep -E '^ +4096 ' /tmp/cli.out | tr -s ' ')" "$(tail -1 /tmp/cli.time)"
  grep -ih "r\^2" /tmp/cli.out /tmp/srv.out
}
for rep in 1 2 3; do
  for t in write_bw send_bw; do
    run c "" $t; run go1 "" $t; run go2 GOMAXPROCS=2 $t
  done
done
