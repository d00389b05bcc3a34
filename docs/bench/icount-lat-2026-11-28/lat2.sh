#!/bin/sh
# c (perftest), g (rdmaperf), w (rdmaperf-lw: a variant) alternating; $INV_TEST $INV_SIZE x $INV_ITERS.
. docs/bench/gap-6.1-2026-11-24/common.sh
cp out/inv/rdmaperf /tmp/rdmaperf; cp ${INV_VAR:-out/inv/rdmaperf-lw} /tmp/rdmaperf-lw
N=${INV_ITERS:-2000}; S=${INV_SIZE:-2}; T=${INV_TEST:-read_lat}
port=20100
for tool in ${INV_ORDER:-c g w c g w c g w}; do
  port=$((port+1))
  case $tool in
    c) srv="ib_$T -s $S -n $N -d $d -x $gid -p $port -F"; cli="$srv";;
    g) srv="/tmp/rdmaperf $T --perftest -s $S -n $N -d $d -x $gid -p $port"; cli="$srv";;
    w) srv="/tmp/rdmaperf-lw $T --perftest -s $S -n $N -d $d -x $gid -p $port"; cli="$srv";;
  esac
  $srv $INV_XARGS > /tmp/srv.out 2>&1 &
  spid=$!; sleep 0.5
  $cli $INV_XARGS $RDMALAB_ADDR > /tmp/cli.out 2>&1
  wait $spid
  echo "=== $T $S x $N $tool: $(grep -hE "^ +$S " /tmp/cli.out | tr -s ' ' | head -1)"
  echo "    server: $(grep -hE "^ +$S " /tmp/srv.out | tr -s ' ' | head -1)"
done
