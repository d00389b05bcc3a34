#!/bin/sh
# One VM, write_bw and send_bw 4 KiB against perftest's server: does
# rdmaperf's yield (runtime.Gosched every 8 ms in the measured loop) cost
# its client the gap to perftest's? Clients alternate in rounds: perftest's
# ib_* (c), rdmaperf as shipped (g), rdmaperf with RDMAPERF_YIELD=0 (g0: no
# voluntary turn; the runtime preempts the loop by force after 10 ms
# instead). Each client runs under `perf stat` (context switches and CPU
# migrations of all its threads; no sampler competing for the CPU).
# Run: go build -o out/inv/rdmaperf ./cmd/rdmaperf, then
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 --timeout 15m -- sh docs/bench/gap-6.1-2026-11-26-yield/investigate-yield.sh
here=docs/bench/gap-6.1-2026-11-24
. $here/common.sh
B=${INV_BIN:-out/inv}
R=${INV_ROUNDS:-5}
port=19800
cli() { # tool test
	case $1 in
	c) echo "ib_$2 -s 4096 -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR" ;;
	g) echo "$B/rdmaperf $2 --perftest -s 4096 -n $N -d $d -x $gid -p $port $RDMALAB_ADDR" ;;
	g0) echo "env RDMAPERF_YIELD=0 $B/rdmaperf $2 --perftest -s 4096 -n $N -d $d -x $gid -p $port $RDMALAB_ADDR" ;;
	esac
}
for t in write_bw send_bw; do
	r=1
	while [ $r -le $R ]; do
		for tool in c g g0; do
			start $t
			perf stat -x, -e context-switches,cpu-migrations,task-clock -o /tmp/stat.txt -- $(cli $tool $t) > /tmp/cli.out 2>&1
			wait $spid
			bw=$(grep -E '^ +4096 ' /tmp/cli.out | tr -s ' ' | cut -d' ' -f5)
			cs=$(awk -F, '$3=="context-switches"{print $1}' /tmp/stat.txt)
			mig=$(awk -F, '$3=="cpu-migrations"{print $1}' /tmp/stat.txt)
			tc=$(awk -F, '$3=="task-clock"{printf "%.0f", $1}' /tmp/stat.txt)
			echo "RESULT $t round=$r tool=$tool bw_MBps=$bw ctxsw=$cs migrations=$mig task_ms=$tc"
			[ -n "$bw" ] || { echo "--- no result line; client output:"; cat /tmp/cli.out; cat /tmp/srv.out; }
		done
		r=$((r+1))
	done
done
