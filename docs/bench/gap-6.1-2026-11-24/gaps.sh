#!/bin/sh
# gaps.sh FILE: FILE is `perf script -F tid,cpu,time,event` of a client
# recorded with syscalls:sys_enter_write, irq_vectors:local_timer_entry,
# sched:sched_switch and irq:softirq_entry. It summarises the gaps between
# the doorbell writes of the thread that made the most writes (setup's and
# end's 20 dropped): their distribution, the cost of a timer tick, and which
# of the slow gaps (over twice the median) had a switch away from the
# thread, a timer interrupt or a softirq in it.
f=$1
T=$(awk '$NF ~ /sys_enter_write/ {print $1}' "$f" | sort | uniq -c | sort -rn | awk 'NR==1{print $2}')
awk -v T="$T" '$1 == T {
	tm = $3; sub(/:$/, "", tm); e = $4
	if (e ~ /sys_enter_write/) {
		if (last) print (tm - last) * 1e6, ft, fs, fq
		last = tm; ft = fs = fq = 0
	} else if (e ~ /local_timer_entry/) ft++
	else if (e ~ /sched_switch/) fs++
	else if (e ~ /softirq_entry/) fq++
}' "$f" | awk 'NR > 20 {print} ' | head -n -20 > "$f.gaps"
med=$(sort -n "$f.gaps" | awk '{a[NR]=$1} END{print a[int(NR/2)]}')
sort -n "$f.gaps" | awk -v T="$T" -v med="$med" '{a[NR]=$1; tot+=$1}
	END{printf "    thread %s: %d gaps, %.0f us; p10 %.1f median %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.0f us\n", T, NR, tot, a[int(NR*.1)], med, a[int(NR*.9)], a[int(NR*.99)], a[int(NR*.999)], a[NR]}'
awk -v med="$med" '{tot += $1}
	$2 { nt++; tt += $1 - med }
	$3 { nsw++; tsw += $1 - med }
	$1 > 2 * med { slow++; x = $1 - med; ex += x
		if ($3) { ns++; xs += x } else if ($2) { nk++; xk += x } else if ($4) { nq++; xq += x } else { nn++; xn += x } }
	END {
	printf "    gaps with a timer tick: %d, %.1f us each over the median; with a switch away: %d, %.1f us each\n", nt, nt ? tt / nt : 0, nsw, nsw ? tsw / nsw : 0
	printf "    slow (>2x median): %d gaps, excess %.0f us = %.1f%% of the total; of them\n", slow, ex, 100 * ex / tot
	printf "      with a switch away: %d (%.0f us), a tick (no switch): %d (%.0f us), a softirq only: %d (%.0f us), none: %d (%.0f us)\n", ns, xs, nk, xk, nq, xq, nn, xn
	}' "$f.gaps"
