#!/bin/sh
# c (perftest) and g (rdmaperf --perftest) alternating, $INV_TEST $INV_SIZE x $INV_ITERS, latency lines.
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
N=${INV_ITERS:-2000}; S=${INV_SIZE:-2}; T=${INV_TEST:-read_lat}
port=20100
for tool in ${INV_ORDER:-c g c g c g}; do
  port=$((port+1))
  ib_$T -s $S -n $N -d $d -x $gid -p $port -F $INV_XARGS > /tmp/srv.out 2>&1 &
  spid=$!; sleep 0.5
  case $tool in
    c) set -- ib_$T -s $S -n $N -d $d -x $gid -p $port -F $INV_XARGS $RDMALAB_ADDR;;
    g) set -- $P $T --perftest -s $S -n $N -d $d -x $gid -p $port $INV_XARGS $RDMALAB_ADDR;;
  esac
  "$@" > /tmp/cli.out 2>&1
  wait $spid
  echo "=== $T $S x $N $tool: $(grep -E "^ +$S " /tmp/cli.out | tr -s ' ')"
done
