#!/bin/sh
# One VM under the instruction clock (rdmalab run --icount): the client's
# own samples (perf record of the client process, cpu-clock at 10 kHz of the
# guest's instruction time: one sample per 100,000 guest instructions),
# perftest (c) and rdmaperf --perftest (g) alternating c g c g, against
# perftest's server, $INV_TEST $INV_SIZE B x $INV_ITERS: the sample counts
# per DSO and the top symbols, to split the client's instructions into
# user space (its loop, the provider, the runtime, the vDSO) and kernel.
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 -- sh docs/bench/icount-6.1-2026-11-28/user.sh
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
N=${INV_ITERS:-100000}; S=${INV_SIZE:-64}; T=${INV_TEST:-write_bw}
port=20000
for tool in c g c g; do
  port=$((port+1))
  ib_$T -s $S -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
  spid=$!; sleep 0.5
  case $tool in
    c) set -- ib_$T -s $S -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR;;
    g) set -- $P $T --perftest -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR;;
  esac
  perf record -q -F 10000 -o /tmp/perf.data -- "$@" > /tmp/cli.out 2>/tmp/rec.err
  wait $spid
  echo "=== $T $S B x $N, client $tool: $(grep -E "^ +$S " /tmp/cli.out | tr -s ' ')"
  perf report -i /tmp/perf.data -n --sort dso --stdio 2>/dev/null | grep -E '^#.*Samples|^ +[0-9]' | head -12
  echo "--- top symbols"
  perf report -i /tmp/perf.data -n --sort dso,sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -40
done
