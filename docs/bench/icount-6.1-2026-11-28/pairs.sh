#!/bin/sh
# One VM under the instruction clock (rdmalab run --icount): each client
# (c perftest, g rdmaperf --perftest) against each server, $INV_TEST of
# $INV_SIZE bytes and $INV_ITERS iterations, the four pairings rotated
# $INV_REPS times; per run the client's BW and both processes' context
# switches (GNU time: %c involuntary, %w voluntary).
# Run: CGO_ENABLED=0 go build -o out/inv/rdmaperf ./cmd/rdmaperf &&
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 -- sh docs/bench/icount-6.1-2026-11-28/pairs.sh
. docs/bench/gap-6.1-2026-11-24/common.sh
cp ${INV_BIN:-out/inv}/rdmaperf /tmp/rdmaperf
P=/tmp/rdmaperf
N=${INV_ITERS:-4096}; S=${INV_SIZE:-4096}; T=${INV_TEST:-read_bw}
port=19800
args() { # tool
  case $1 in
    c) echo "ib_$T -s $S -n $N -d $d -x $gid -p $port -F";;
    g) echo "$P $T --perftest -s $S -n $N -d $d -x $gid -p $port";;
  esac
}
for rep in $(seq ${INV_REPS:-3}); do
  for pair in cc cg gc gg gg gc cg cc; do
    cli=${pair%?}; srv=${pair#?}; port=$((port+1))
    /usr/bin/time -f "%c %w" -o /tmp/srv.time $(args $srv) > /tmp/srv.out 2>&1 &
    spid=$!; sleep 0.5
    /usr/bin/time -f "%c %w" -o /tmp/cli.time $(args $cli) $RDMALAB_ADDR > /tmp/cli.out 2>&1
    wait $spid
    bw=$(grep -E "^ +$S " /tmp/cli.out | tr -s ' ' | cut -d' ' -f5)
    echo "rep $rep client $cli server $srv: BW $bw  client ivcsw/vcsw $(cat /tmp/cli.time)  server $(cat /tmp/srv.time)"
  done
done
