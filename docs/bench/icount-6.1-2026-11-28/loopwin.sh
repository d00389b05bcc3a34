#!/bin/sh
# One VM under the instruction clock (rdmalab run --icount): perf record
# (cpu-clock at 10 kHz of the guest's instruction time: one sample per
# 100,000 guest instructions) of each client run, perftest (c) and
# rdmaperf --perftest (g) alternating c g c g against perftest's server,
# $INV_TEST $INV_SIZE B x $INV_ITERS.
# INV_SCOPE=all (default): system-wide; the perf script dumps go to $INV_OUT
#   (default out/inv) for loopwin.py, on the host, which counts only the
#   samples inside the loop: from the client's first to its last sample in
#   the kernel's ib_uverbs_post_send (every post goes through it).
# INV_SCOPE=process: the client process only (the whole run, set-up
#   included), its sample counts per DSO and its top symbols printed here
#   (logs/user-write64-6.1.log).
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 [--env INV_SCOPE=process] -- sh docs/bench/icount-6.1-2026-11-28/loopwin.sh
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
N=${INV_ITERS:-100000}; S=${INV_SIZE:-64}; T=${INV_TEST:-write_bw}
scope=${INV_SCOPE:-all}
all=-a; [ $scope = process ] && all=
port=20100
i=0
for tool in c g c g; do
  port=$((port+1))
  ib_$T -s $S -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
  spid=$!; sleep 0.5
  case $tool in
    c) set -- ib_$T -s $S -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR; name=ib_$T;;
    g) set -- $P $T --perftest -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR; name=rdmaperf;;
  esac
  perf record -q $all -F 10000 -o /tmp/perf.data -- "$@" > /tmp/cli.out 2>/tmp/rec.err
  wait $spid
  echo "=== $T $S B x $N, client $tool: $(grep -E "^ +$S " /tmp/cli.out | tr -s ' ')"
  if [ $scope = process ]; then
    perf report -i /tmp/perf.data -n --sort dso --stdio 2>/dev/null | grep -E '^#.*Samples|^ +[0-9]' | head -12
    echo "--- top symbols"
    perf report -i /tmp/perf.data -n --sort dso,sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -40
    continue
  fi
  i=$((i+1)); perf script -i /tmp/perf.data -F comm,pid,tid,time,ip,sym 2>/dev/null > ${INV_OUT:-out/inv}/loopwin-$i-$tool.txt
  echo "  samples: ${INV_OUT:-out/inv}/loopwin-$i-$tool.txt (loopwin.py reads them)"
done
