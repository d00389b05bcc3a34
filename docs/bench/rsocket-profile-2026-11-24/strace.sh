#!/bin/sh
# The first look (before profile.sh): C rstream against Go rslat, 64 B
# ping-pong, timed under perf stat, then strace -f -c of each client over
# 1000 and 3000 round trips (the difference per round trip). strace slows
# every call enough to change what happens (the C client then catches every
# reply in its polling, the Go one sleeps less): profile.sh counts with
# perf's tracepoints instead. Run as profile.sh is (sh /tmp/rslat/strace.sh).
cd /tmp/rslat
A=$RDMALAB_ADDR
N=${N:-3000}
P=7000
PS="perf stat -x, -e task-clock,context-switches,cpu-migrations"
uname -r
nproc
cpair() { # label, then client wrapper
	P=$((P+1))
	$PS -o /tmp/rslat/ps.srv rstream -S 64 -C 1 -I $N -T b -p $P -b $A >/tmp/rslat/srv.out 2>&1 &
	sp=$!
	sleep 1
	$PS -o /tmp/rslat/ps.cli rstream -S 64 -C 1 -I $N -T b -p $P -s $A >/tmp/rslat/cli.out 2>&1
	wait $sp
	us=$(awk '$1=="custom"{print $8*2}' /tmp/rslat/cli.out)
	echo "RESULT C: $us us/rt"
	echo "  client: $(grep -v '^#' /tmp/rslat/ps.cli | grep . | cut -d, -f1,3 | tr '\n' ' ')"
	echo "  server: $(grep -v '^#' /tmp/rslat/ps.srv | grep . | cut -d, -f1,3 | tr '\n' ' ')"
}
gopair() { # GOMAXPROCS, extra flags
	P=$((P+1))
	g=$1; shift
	GOMAXPROCS=$g $PS -o /tmp/rslat/ps.srv ./rslat -l -n $N "$@" $A:$P >/tmp/rslat/srv.out 2>&1 &
	sp=$!
	sleep 1
	GOMAXPROCS=$g $PS -o /tmp/rslat/ps.cli ./rslat -n $N "$@" $A:$P 2>&1
	wait $sp
	cat /tmp/rslat/srv.out
	echo "  client: $(grep -v '^#' /tmp/rslat/ps.cli | grep . | cut -d, -f1,3 | tr '\n' ' ')"
	echo "  server: $(grep -v '^#' /tmp/rslat/ps.srv | grep . | cut -d, -f1,3 | tr '\n' ' ')"
}
goboth() {
	P=$((P+1))
	g=$1; shift
	GOMAXPROCS=$g $PS -o /tmp/rslat/ps.cli ./rslat -both -n $N "$@" $A:$P 2>&1
	echo "  process: $(grep -v '^#' /tmp/rslat/ps.cli | grep . | cut -d, -f1,3 | tr '\n' ' ')"
}
for r in 1 2 3; do
	echo "== round $r"
	cpair
	gopair 2
	gopair 1
	goboth 2
	goboth 1
done
echo "== strace"
for n in 1000 3000; do
	N=$n
	P=$((P+1))
	rstream -S 64 -C 1 -I $N -T b -p $P -b $A >/dev/null 2>&1 &
	sp=$!; sleep 1
	strace -f -c -o /tmp/rslat/st.c.$n rstream -S 64 -C 1 -I $N -T b -p $P -s $A >/dev/null 2>&1
	wait $sp
	for g in 2 1; do
		P=$((P+1))
		GOMAXPROCS=$g ./rslat -l -n $N $A:$P >/dev/null 2>&1 &
		sp=$!; sleep 1
		GOMAXPROCS=$g strace -f -c -o /tmp/rslat/st.go$g.$n ./rslat -n $N $A:$P
		wait $sp
	done
done
for f in c go2 go1; do
	echo "== strace $f: calls(3000)-calls(1000) / 2000 per round trip"
	awk 'FNR==NR && $4 ~ /^[0-9]+$/ {a[$NF]=$4; e[$NF]=(NF==6?$5:0); next} $4 ~ /^[0-9]+$/ {d=($4-a[$NF])/2000; x=((NF==6?$5:0)-e[$NF])/2000; if (d>0.01) printf "  %-16s %.2f (errors %.2f)\n", $NF, d, x}' /tmp/rslat/st.$f.1000 /tmp/rslat/st.$f.3000
done
