# common.sh, sourced by the investigate scripts in the guest: $gid, perftest's
# RoCE v2 IPv4 GID index of $RDMALAB_DEV; tracefs and perf set up; start TEST
# runs perftest's server of TEST (4 KiB, $N iterations) on the next port,
# its pid in $spid.
d=$RDMALAB_DEV; p=/sys/class/infiniband/$d/ports/1
for f in $p/gids/*; do i=${f##*/}; g=$(cat $f 2>/dev/null); t=$(cat $p/gid_attrs/types/$i 2>/dev/null)
  case "$t/$g" in "RoCE v2/0000:0000:0000:0000:0000:ffff:"*) gid=$i; break;; esac
done
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
echo -1 > /proc/sys/kernel/perf_event_paranoid
echo 0 > /proc/sys/kernel/kptr_restrict
echo "kernel $(uname -r); THP $(cat /sys/kernel/mm/transparent_hugepage/enabled); clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource); gid $gid"
N=${INV_ITERS:-40960}
start() { # test
  port=$((port+1))
  ib_$1 -s 4096 -n $N -d $d -x $gid -p $port -F > /tmp/srv.out 2>&1 &
  spid=$!
  sleep 0.5
}
