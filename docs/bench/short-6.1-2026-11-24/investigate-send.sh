#!/bin/sh
# One VM: send_bw 64 B and send_lat 2 B, rdmaperf (GOMAXPROCS default and 1) vs perftest,
# rxe counters and the tools' own counters around each run.
d=$RDMALAB_DEV; p=/sys/class/infiniband/$d/ports/1
for f in $p/gids/*; do i=${f##*/}; g=$(cat $f 2>/dev/null); t=$(cat $p/gid_attrs/types/$i 2>/dev/null)
  case "$t/$g" in "RoCE v2/0000:0000:0000:0000:0000:ffff:"*) gid=$i; break;; esac
done
P=out/inv/rdmaperf
echo "nproc=$(nproc) kernel=$(uname -r) clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
snap() { for c in $p/hw_counters/*; do echo "${c##*/} $(cat $c)"; done | sort; }
port=19500
run() { # label test size iters env tool-args...
  label=$1 test=$2 size=$3 n=$4 envs=$5; shift 5
  port=$((port+1))
  case $label in
    go*) S="env $envs $P $test -s $size -n $n -d $d -x $gid -p $port --json $*";;
    *) S="ib_$test -s $size -n $n -d $d -x $gid -p $port -F $*";;
  esac
  snap > /tmp/c0
  $S > /tmp/srv.out 2>&1 &
  spid=$!
  sleep 0.5
  /usr/bin/time -f "client: %e s wall, %U user, %S sys, %c ivcsw, %w vcsw" $S $RDMALAB_ADDR > /tmp/cli.out 2>/tmp/cli.time || S2=1
  wait $spid
  snap > /tmp/c1
  printf "=== %-8s %-8s %5s B: " $label $test $size
  case $label in
    go*) grep -oE '"(bw_average|t_typical|vcsw|ivcsw|user_sec|sys_sec|polls|syscw)":[0-9.]*' /tmp/cli.out | tr '\n' ' '; echo; echo "    server: $(grep -oE '"(bw_average|vcsw|ivcsw|user_sec|sys_sec|polls)":[0-9.]*' /tmp/srv.out | tr '\n' ' ')";;
    *) grep -E "^ +$size " /tmp/cli.out; grep -ih "r\^2" /tmp/cli.out /tmp/srv.out;;
  esac
  echo "    $(tail -1 /tmp/cli.time)"
  echo "    rxe: $(join /tmp/c0 /tmp/c1 | awk '$3!=$2{printf "%s +%d  ", $1, $3-$2}')"
}
for rep in 1 2 3; do
  run go send_bw 64 5000 ""
  run c send_bw 64 5000 ""
  run go1 send_bw 64 5000 "GOMAXPROCS=1"
done
for rep in 1 2 3; do
  run go send_lat 2 1000 ""
  run c send_lat 2 1000 ""
  run go1 send_lat 2 1000 "GOMAXPROCS=1"
done
# CPU profiles of both sides of a longer send_bw 64 B run.
port=$((port+1))
S="$P send_bw -s 64 -n 20000 -d $d -x $gid -p $port --json"
$S --cpuprofile out/inv/srv-send_bw.pprof > /tmp/srv.out 2>&1 &
spid=$!; sleep 0.5
$S --cpuprofile out/inv/cli-send_bw.pprof $RDMALAB_ADDR > /tmp/cli.out 2>&1; wait $spid
echo "=== profiled: $(grep -oE '"(bw_average|ivcsw|vcsw)":[0-9.]*' /tmp/cli.out | tr '\n' ' ')"
