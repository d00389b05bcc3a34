#!/bin/sh
# Cross pairs under the instruction clock: cc (perftest both sides), gc (rdmaperf
# client, perftest server), cg (perftest client, rdmaperf server), gg (rdmaperf
# both, its own exchange). $INV_TEST $INV_SIZE x $INV_ITERS. Prints the client's line.
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
N=${INV_ITERS:-2000}; S=${INV_SIZE:-64}; T=${INV_TEST:-send_bw}
port=20100
for pair in ${INV_ORDER:-cc gc cg gg cc gc cg gg cc gc cg gg}; do
  port=$((port+1))
  C="ib_$T -s $S -n $N -d $d -x $gid -p $port -F"
  case $pair in
    cc) srv="$C"; cli="$C";;
    gc) srv="$C"; cli="env $INV_CENV $P $T --perftest $INV_CARGS -s $S -n $N -d $d -x $gid -p $port";;
    cg) srv="$P $T --perftest -s $S -n $N -d $d -x $gid -p $port"; cli="$C";;
    gg) srv="$P $T -s $S -n $N -d $d -x $gid -p $port"; cli="$srv";;
  esac
  $srv > /tmp/srv.out 2>&1 &
  spid=$!; sleep 0.5
  $cli $RDMALAB_ADDR > /tmp/cli.out 2>&1
  wait $spid
  echo "=== $T $S x $N $pair: $(grep -hE "^ +$S " /tmp/cli.out | tr -s ' ' | head -1)"
done
