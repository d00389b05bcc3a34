#!/bin/sh
# One VM under the instruction clock (rdmalab run --icount): write_bw 64 B,
# 20,000 iterations, against perftest's server, clients alternating c g c g.
# For each client run: its BW, then a system-wide perf profile (cpu-clock
# at 4999 Hz of the guest's instruction time) sorted by command and DSO and
# by the client's top symbols, so that the samples of both tools' runs can
# be set side by side.
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 -- sh docs/bench/icount-6.1-2026-11-28/where.sh
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
N=${INV_ITERS:-20000}; S=${INV_SIZE:-64}; T=${INV_TEST:-write_bw}
port=19700
for tool in c g c g; do
  port=$((port+1))
  ib_$T -s $S -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
  spid=$!; sleep 0.5
  case $tool in
    c) set -- ib_$T -s $S -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR;;
    g) set -- $P $T --perftest -s $S -n $N -d $d -x $gid -p $port $RDMALAB_ADDR;;
  esac
  perf record -a -F 4999 -o /tmp/perf.data -- "$@" > /tmp/cli.out 2>/tmp/rec.err
  wait $spid
  echo "=== $T $S B $tool: $(grep -E "^ +$S " /tmp/cli.out | tr -s ' ')"
  perf report -i /tmp/perf.data --sort comm,dso --stdio 2>/dev/null | grep -E '^#.*Samples|^ +[0-9]' | head -14
  echo "--- top symbols of all samples"
  perf report -i /tmp/perf.data --sort dso,sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -25
done
