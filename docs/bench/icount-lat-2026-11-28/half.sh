#!/bin/sh
# Half-polling ping-pong: the tool under test (c: perftest, g: rdmaperf) polls on
# one side ($INV_ROLE: client or server); the other side is perftest sleeping on
# CQ events (-e). $INV_TEST $INV_SIZE x $INV_ITERS.
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
N=${INV_ITERS:-2000}; S=${INV_SIZE:-2}; T=${INV_TEST:-send_lat}; R=${INV_ROLE:-client}
port=20100
for tool in ${INV_ORDER:-c g c g c g}; do
  port=$((port+1))
  case $tool in
    c) tut="ib_$T -s $S -n $N -d $d -x $gid -p $port -F";;
    g) tut="$P $T --perftest -s $S -n $N -d $d -x $gid -p $port";;
  esac
  ref="ib_$T -s $S -n $N -d $d -x $gid -p $port -F -e"
  if [ $R = client ]; then srv=$ref; cli="$tut $RDMALAB_ADDR"; else srv=$tut; cli="$ref $RDMALAB_ADDR"; fi
  timeout 60 $srv > /tmp/srv.out 2>&1 &
  spid=$!; sleep 0.5
  timeout 50 $cli > /tmp/cli.out 2>&1; echo "client rc=$?"
  wait $spid
  echo "=== $T $S x $N $R $tool: $(grep -hE "^ +$S " /tmp/cli.out /tmp/srv.out | tr -s ' ' | head -1)"
done
