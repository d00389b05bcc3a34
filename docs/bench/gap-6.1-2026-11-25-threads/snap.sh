# snap.sh PID: one line per thread of PID: tid, utime+stime in
# clock ticks, voluntary and involuntary context switches.
for t in /proc/$1/task/*; do
	[ -r $t/stat ] || continue
	echo "${t##*/} $(awk '{print $14 + $15}' $t/stat 2>/dev/null) $(awk '/^voluntary_ctxt_switches/ {v=$2} /^nonvoluntary_ctxt_switches/ {n=$2} END {print v, n}' $t/status 2>/dev/null)"
done
