#!/bin/sh
# Profile of one 64 B round trip in a lab guest, C rstream against Go
# (tools/perf/rslat), in one boot: per round trip the system calls
# by name, context switches and wake-ups (perf stat's tracepoint counters,
# which, unlike strace, do not slow the calls down), the clock source and
# what a clock read costs, then a system-wide perf record of each. Go runs
# in one process (as BenchmarkLabRstream's Go pair) and in two, with
# GOMAXPROCS 2 and 1; ./rslat and ./rslat-raw are two builds to compare
# (here: before and after the raw arm and event read). Run from the host:
#   mkdir -p /tmp/rslat && cp docs/bench/rsocket-profile-2026-11-24/*.sh /tmp/rslat/
#   git stash/checkout as needed; CGO_ENABLED=0 go build -o /tmp/rslat/rslat ./tools/perf/rslat
#   (the second build as /tmp/rslat/rslat-raw)
#   flock /tmp/rdmago-lab.lock go run ./cmd/rdmalab run --kernel 6.1 --timeout 25m \
#       --share /tmp/rslat -- sh /tmp/rslat/profile.sh
cd /tmp/rslat
A=$RDMALAB_ADDR
N=${N:-4000}
P=7100
uname -r
[ -d /sys/kernel/tracing/events ] || mount -t tracefs none /sys/kernel/tracing 2>&1
ls /sys/kernel/tracing/events >/dev/null 2>&1 || echo "no tracefs"
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource)"
./rslat -clock
EV=task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_clock_gettime,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_sched_yield,syscalls:sys_enter_tgkill,sched:sched_wakeup
PS="perf stat -x, -e $EV"
show() { # file label
	awk -F, -v n=$N -v l="$2" 'BEGIN{printf "  %s:", l} $1 ~ /^[0-9.]+$/ {e=$3; sub(/.*:sys_enter_/, "", e); sub(/.*:/, "", e); printf " %s %.2f", e, $1/n} END{print ""}' $1
}
cpair() {
	P=$((P+1))
	$PS -o /tmp/rslat/ps.srv rstream -S 64 -C 1 -I $N -T b -p $P -b $A >/tmp/rslat/srv.out 2>&1 &
	sp=$!
	sleep 1
	$PS -o /tmp/rslat/ps.cli rstream -S 64 -C 1 -I $N -T b -p $P -s $A >/tmp/rslat/cli.out 2>&1
	wait $sp
	echo "RESULT C $1: $(awk '$1=="custom"{print $8*2}' /tmp/rslat/cli.out) us/rt (per rt below)"
	show /tmp/rslat/ps.cli client
	show /tmp/rslat/ps.srv server
}
gosep() {
	P=$((P+1))
	g=$1; shift
	GOMAXPROCS=$g $PS -o /tmp/rslat/ps.srv $BIN -l -n $N "$@" $A:$P >/tmp/rslat/srv.out 2>&1 &
	sp=$!
	sleep 1
	GOMAXPROCS=$g $PS -o /tmp/rslat/ps.cli $BIN -n $N "$@" $A:$P 2>&1
	wait $sp
	show /tmp/rslat/ps.cli client
	show /tmp/rslat/ps.srv server
}
goboth() {
	P=$((P+1))
	g=$1; shift
	GOMAXPROCS=$g $PS -o /tmp/rslat/ps.cli $BIN -both -n $N "$@" $A:$P 2>&1
	show /tmp/rslat/ps.cli process
}
pt0() {
	# /etc is the host's, read-only: a tmpfs over /etc/rdma for the file
	mount -t tmpfs none /etc/rdma && mkdir -p /etc/rdma/rsocket && echo 0 > /etc/rdma/rsocket/polling_time && cpair "polling_time 0"
	umount /etc/rdma
}
rounds() {
for r in 1 2; do
	echo "== round $r"
	cpair default
	pt0
	BIN=./rslat
	echo "-- stock"
	goboth 2
	goboth 1
	gosep 2
	BIN=./rslat-raw
	echo "-- raw arm + raw event read"
	goboth 2
	goboth 1
	gosep 2
done
}
rounds
echo "== perf record -a (cpu-clock), system-wide, per pairing"
N=3000
prec() { # label, then command to run the pair
	l=$1; shift
	perf record -q -a -e cpu-clock -F 5000 -o /tmp/rslat/perf.$l.data -- "$@" >/tmp/rslat/rec.$l.out 2>&1
	grep -E "RESULT|^custom" /tmp/rslat/rec.$l.out
	echo "-- $l: by command"
	perf report -q -i /tmp/rslat/perf.$l.data --stdio --sort comm 2>/dev/null | head -12
	echo "-- $l: by command and dso (user vs kernel)"
	perf report -q -i /tmp/rslat/perf.$l.data --stdio --sort comm,dso 2>/dev/null | head -12
	echo "-- $l: by symbol"
	perf report -q -i /tmp/rslat/perf.$l.data --stdio --sort comm,sym 2>/dev/null | head -45
}
P=$((P+50))
prec c sh /tmp/rslat/cpair.sh $P $A $N
P=$((P+1))
prec goboth1 env GOMAXPROCS=1 ./rslat -both -n $N $A:$P
P=$((P+1))
prec goboth2 env GOMAXPROCS=2 ./rslat -both -n $N $A:$P
P=$((P+1))
prec rawboth2 env GOMAXPROCS=2 ./rslat-raw -both -n $N $A:$P
for cs in tsc kvm-clock; do
	if grep -qw $cs /sys/devices/system/clocksource/clocksource0/available_clocksource; then
		echo $cs > /sys/devices/system/clocksource/clocksource0/current_clocksource
		echo "== clocksource now $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
		./rslat -clock
		rounds
		break
	fi
done
