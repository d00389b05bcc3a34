# Captures the lab fixtures of internal/sysfs, tools/devinfo and
# internal/rdmanl (testdata/lab-$K) in one boot. From the repository root:
#
#   go test -c -o capture-rdmanl.test ./internal/rdmanl
#   go run ./cmd/rdmalab run --kernel 6.1 --env K=6.1 --env RDMANL_TEST=$PWD/capture-rdmanl.test \
#       -- sh tools/devinfo/testdata/capture.sh
#   rm capture-rdmanl.test
#   for d in internal/sysfs/testdata/lab-*/sys/module/*; do : > $d/.capture; done   # git keeps no empty dirs
#
# It runs in the guest with the host's root (non-bare), so the C tools are
# there: ibv_rc_pingpong and rping hold resources while sysfs is copied and
# the reference outputs (ibv_devinfo, ibv_devices, rdma -j ...) are taken.
set -u
W=$(pwd)
R=$W/internal/sysfs/testdata/lab-$K
REF=$W/tools/devinfo/testdata/lab-$K
NL=$W/internal/rdmanl/testdata/lab-$K
rm -rf "$R" "$REF" "$NL"; mkdir -p "$R" "$REF" "$NL"
D=$RDMALAB_DEV
# resources held by C programs while we look
ibv_rc_pingpong -d "$D" -g 1 >/dev/null 2>&1 &
P1=$!
rping -s -a "$RDMALAB_ADDR" -C 1 >/dev/null 2>&1 &
P2=$!
sleep 3
cp1() { # copy a readable file, keeping its path under $R
  if v=$(cat "$1" 2>/dev/null); then mkdir -p "$R$(dirname "$1")"; printf '%s\n' "$v" > "$R$1"; fi
}
B=/sys/class/infiniband/$D
for f in fw_ver hw_rev node_desc node_guid node_type sys_image_guid board_id hca_type; do cp1 $B/$f; done
for p in $B/ports/*; do
  for f in cap_mask lid lid_mask_count link_layer phys_state rate sm_lid sm_sl state; do cp1 $p/$f; done
  for f in $p/pkeys/*; do cp1 $f; done
  for f in $p/hw_counters/* $p/counters/*; do [ -f "$f" ] && cp1 $f; done
  n=$(ls $p/gids | wc -l)
  for i in 0 1 2 3 4 5 6 7 $(grep -L '^0000:0000:0000:0000:0000:0000:0000:0000$' $p/gids/* | sed 's#.*/##'); do
    [ -e "$R$p/gids/$i" ] && continue
    cp1 $p/gids/$i; cp1 $p/gid_attrs/types/$i; cp1 $p/gid_attrs/ndevs/$i
  done
  echo "$n" > "$R$p/gid_tbl_len.capture"
done
cp1 /sys/class/infiniband_verbs/abi_version
for u in /sys/class/infiniband_verbs/uverbs*; do for f in abi_version dev ibdev; do cp1 $u/$f; done; done
for n in /sys/class/net/*; do for f in mtu operstate flags carrier ifindex address type; do cp1 $n/$f; done; done
cp1 /proc/modules
cp1 /proc/crypto
cp1 /sys/class/misc/rdma_cm/dev
for m in /sys/module/*; do mkdir -p "$R$m"; done
mkdir -p "$R/dev/infiniband"
ls -ln /dev/infiniband > "$R/dev/infiniband.capture"
for d in /dev/infiniband/*; do : > "$R$d"; chmod "$(stat -c %a "$d")" "$R$d"; done
ip -j addr > "$R/ip-addr.json"
uname -r > "$R/uname-r"
# reference outputs of the C tools in the same boot
ibv_devinfo -v > "$REF/ibv_devinfo-v.txt" 2>&1
ibv_devinfo > "$REF/ibv_devinfo.txt" 2>&1
ibv_devices > "$REF/ibv_devices.txt" 2>&1
rdma -j link show > "$REF/rdma-link.json"
rdma -j dev show > "$REF/rdma-dev.json"
rdma -j res show > "$NL/rdma-res.json"
for t in qp cq mr pd cm_id; do rdma -j -d res show $t > "$NL/rdma-res-$t.json"; done
for pid in $(pgrep -d ' ' 'ibv_rc_pingpong|rping'); do echo "$pid $(cat /proc/$pid/comm)"; done > "$NL/pids.txt"
"$RDMANL_TEST" -test.run TestLabResources -test.v -rdmanl.capture="$NL" > /dev/null 2>&1 || echo CAPTURE FAILED
kill $P1 $P2 2>/dev/null; wait
echo done
