#!/bin/sh
# One VM under the instruction clock (rdmalab run --icount): a system-wide
# perf record (cpu-clock at 10 kHz of the guest's instruction time: one
# sample per 100,000 guest instructions) of each client run, perftest (c)
# and rdmaperf --perftest (g) alternating c g c g against perftest's
# server, $INV_TEST $INV_SIZE B x $INV_ITERS. Only the samples inside the
# loop count: from the client's first to its last sample in the kernel's
# ib_uverbs_post_send (every post goes through it). Per run: the window's
# length in samples, the samples per command in it (the client's threads,
# the server, ksoftirqd, kworkers, swapper = idle), and the top symbols of
# the samples that are not the client's (loopwin.py, on the host, from the
# perf script dumps this writes to $INV_OUT, default out/inv).
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 -- sh docs/bench/icount-6.1-2026-11-28/loopwin.sh
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
N=${INV_ITERS:-100000}; S=${INV_SIZE:-64}; T=${INV_TEST:-write_bw}
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
  perf record -q -a -F 10000 -o /tmp/perf.data -- "$@" > /tmp/cli.out 2>/tmp/rec.err
  wait $spid
  cpid=$(perf script -i /tmp/perf.data -F comm,pid 2>/dev/null | awk -v n=$name '$1==n {print $2}' | sort | uniq -c | sort -rn | awk 'NR==1 {print $2}')
  echo "=== $T $S B x $N, client $tool (pid $cpid): $(grep -E "^ +$S " /tmp/cli.out | tr -s ' ')"
  i=$((i+1)); perf script -i /tmp/perf.data -F comm,pid,tid,time,ip,sym 2>/dev/null > ${INV_OUT:-out/inv}/loopwin-$i-$tool.txt
  echo "  samples: ${INV_OUT:-out/inv}/loopwin-$i-$tool.txt (loopwin.py reads them)"
done
