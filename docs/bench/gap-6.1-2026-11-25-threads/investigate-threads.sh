#!/bin/sh
# One VM, send_bw and write_bw 4 KiB against perftest's server: who takes
# the client's loop thread off its vCPU? For each client (c: perftest's
# ib_*, g: rdmaperf), alternating, a system-wide `perf record` of
# sched:sched_switch during the run; then, for the client's busiest thread
# (the one switched out most), every switch away from it is counted by what
# ran next on that CPU (a thread of the client itself, e.g. the Go
# runtime's sysmon, the perftest server, rxe's kworkers, ksoftirqd, idle),
# and the client's threads are listed with their CPU time and switches
# from /proc (read every 0.2 s while it runs, the last reading kept).
# Run: go build -o out/inv/rdmaperf ./cmd/rdmaperf, then
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --nodes 1 -- sh docs/bench/gap-6.1-2026-11-25-threads/investigate-threads.sh
here=docs/bench/gap-6.1-2026-11-24
me=docs/bench/gap-6.1-2026-11-25-threads
. $here/common.sh
B=${INV_BIN:-out/inv}
port=19700
cli() { # tool test
	case $1 in
	c) echo "ib_$2 -s 4096 -n $N -d $d -x $gid -p $port -F $RDMALAB_ADDR" ;;
	g) echo "$B/rdmaperf $2 --perftest -s 4096 -n $N -d $d -x $gid -p $port $RDMALAB_ADDR" ;;
	esac
}
bwline() { grep -E '^ +4096 ' $1 | tr -s ' '; }
for t in send_bw write_bw; do
	for tool in c g c g c g; do
		start $t
		rm -f /tmp/snap.txt
		perf record -q -a -e sched:sched_switch -o /tmp/sw.data -- sh -c "$(cli $tool $t) > /tmp/cli.out 2>&1 & p=\$!; echo \$p > /tmp/cli.pid; while kill -0 \$p 2>/dev/null; do s=\$(sh $me/snap.sh \$p); [ -n \"\$s\" ] && echo \"\$s\" > /tmp/snap.txt; sleep 0.2; done" 2>/tmp/rec.err
		wait $spid
		cp=$(cat /tmp/cli.pid)
		echo "=== $t $tool (pid $cp): $(bwline /tmp/cli.out)"
		echo "    threads (tid, cpu ticks, voluntary, involuntary switches):"
		sort -k2 -rn /tmp/snap.txt | sed 's/^/      /'
		perf script -i /tmp/sw.data -F cpu,event,trace 2>/dev/null > /tmp/sw.txt
		# The loop thread: the client's thread with the most CPU time.
		L=$(sort -k2 -rn /tmp/snap.txt | awk 'NR==1{print $1}')
		awk -v L="$L" 'FILENAME == "/tmp/snap.txt" { own[$1] = 1; next }
		{
			if (match($0, /prev_pid=[0-9]+/)) prev = substr($0, RSTART + 9, RLENGTH - 9); else next
			if (prev != L) next
			match($0, /next_comm=[^ ]+/); nc = substr($0, RSTART + 10, RLENGTH - 10)
			match($0, /next_pid=[0-9]+/); np = substr($0, RSTART + 9, RLENGTH - 9)
			who = nc
			if (np == 0) who = "idle"
			else if (np in own) who = "the client'"'"'s own thread " np
			else if (nc ~ /^ib_/) who = nc " (the server)"
			sub(/\/[0-9]+$/, "/N", who)
			n[who]++; tot++
		} END {
			printf "    loop thread %s switched away %d times; next on its CPU:\n", L, tot
			for (w in n) printf "      %6d %s\n", n[w], w
		}' /tmp/snap.txt /tmp/sw.txt > /tmp/who.txt
		head -1 /tmp/who.txt
		tail -n +2 /tmp/who.txt | sort -rn
	done
done
