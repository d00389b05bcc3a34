// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/sysfs"
	"golang.org/x/sys/unix"
)

// A pipe answers RDMA_VERBS_IOCTL with ENOTTY, like a kernel without the ioctl
// interface: GET_CONTEXT and QUERY_PORT must fall back to write() commands.
func TestIoctlFallbackToWrite(t *testing.T) {
	c, r := testContext(t)
	fd, err := c.getContext()
	if err != nil {
		t.Fatal(err)
	}
	if c.viaIoctl {
		t.Error("a pipe accepted RDMA_VERBS_IOCTL")
	}
	cmd := readCmd(t, r)
	le := binary.LittleEndian
	if len(cmd) != 16 || le.Uint32(cmd) != abi.IB_USER_VERBS_CMD_GET_CONTEXT || le.Uint16(cmd[4:]) != 4 || le.Uint16(cmd[6:]) != 2 || le.Uint64(cmd[8:]) == 0 {
		t.Errorf("get_context fallback wrote % x", cmd)
	}
	if fd != 0 {
		t.Errorf("async fd %d from an all-zero response", fd)
	}
	if _, err := c.QueryPort(1); err != nil {
		t.Fatal(err)
	}
	cmd = readCmd(t, r)
	if len(cmd) != 24 || le.Uint32(cmd) != abi.IB_USER_VERBS_CMD_QUERY_PORT || le.Uint16(cmd[6:]) != 10 || cmd[16] != 1 {
		t.Errorf("query_port fallback wrote % x", cmd)
	}
}

// An ioctl failure other than "not supported" must not fall back.
func TestIoctlErrorsDoNotFallBack(t *testing.T) {
	for _, e := range []error{unix.ENOTTY, unix.EPROTONOSUPPORT} {
		if !noIoctl(e) {
			t.Errorf("%v does not trigger the write fallback", e)
		}
	}
	for _, e := range []error{unix.EINVAL, unix.EFAULT, unix.ENOMEM, ErrClosed} {
		if noIoctl(e) {
			t.Errorf("%v triggers the write fallback", e)
		}
	}
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, v := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeSysfs roots the device lookups at a fake tree whose files are named
// "verbs/..." for /sys/class/infiniband_verbs/... and "ib/..." for
// /sys/class/infiniband/..., with no RDMA netlink (in the lab the real one
// would name the real devices).
func fakeSysfs(t *testing.T, files map[string]string) {
	t.Helper()
	root := t.TempDir()
	tree := map[string]string{}
	for p, v := range files {
		if rest, ok := strings.CutPrefix(p, "verbs/"); ok {
			p = "sys/class/infiniband_verbs/" + rest
		} else if rest, ok := strings.CutPrefix(p, "ib/"); ok {
			p = "sys/class/infiniband/" + rest
		}
		tree[p] = v
	}
	writeTree(t, root, tree)
	old, oldNL := sysRoot, netlinkInfo
	sysRoot = sysfs.New(root)
	netlinkInfo = func() map[string]nlDevice { return map[string]nlDevice{} }
	t.Cleanup(func() { sysRoot, netlinkInfo = old, oldNL })
}

// TestDevicesNetdevsFromNetlink: with RDMA netlink answering, Devices
// names a device's parent and ports' netdevs without reading its GID table
// (rxe's has 1,024 entries: 0.15-0.4 s a call under the lab's emulation),
// and LookupDevice by netdev still finds a netdev only the GID table names (a VLAN
// on the port's). Without netlink the GID table is read as before.
func TestDevicesNetdevsFromNetlink(t *testing.T) {
	fakeSysfs(t, map[string]string{
		"verbs/abi_version":                 "6",
		"verbs/uverbs0/ibdev":               "rxe0",
		"verbs/uverbs0/abi_version":         "2",
		"ib/rxe0/node_guid":                 "5054:00ff:fe77:0001",
		"ib/rxe0/parent":                    "eth0",
		"ib/rxe0/ports/1/gids/0":            "fe80:0000:0000:0000:5054:00ff:fe77:0001",
		"ib/rxe0/ports/1/gids/1":            "0000:0000:0000:0000:0000:ffff:0a4d:0001",
		"ib/rxe0/ports/1/gid_attrs/types/0": "RoCE v2",
		"ib/rxe0/ports/1/gid_attrs/types/1": "RoCE v2",
		"ib/rxe0/ports/1/gid_attrs/ndevs/0": "eth0",
		"ib/rxe0/ports/1/gid_attrs/ndevs/1": "eth0.5",
	})
	netlinkInfo = func() map[string]nlDevice {
		return map[string]nlDevice{"rxe0": {driverID: 7, netdevs: []string{"eth0"}, ports: true}}
	}
	devs, err := Devices()
	if err != nil || len(devs) != 1 {
		t.Fatalf("Devices: %+v, %v", devs, err)
	}
	if d := devs[0]; !slices.Equal(d.Netdevs, []string{"eth0"}) || d.DriverID != 7 {
		t.Errorf("with netlink: Netdevs %q, DriverID %d; want [eth0] (no GID table read), 7", d.Netdevs, d.DriverID)
	}
	if d, err := LookupDevice(DeviceQuery{Netdev: "eth0.5"}); err != nil || d.Name != "rxe0" {
		t.Errorf("LookupDevice of a netdev only a GID entry names: %+v, %v", d, err)
	}
	if _, err := LookupDevice(DeviceQuery{Netdev: "eth1"}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("LookupDevice(Netdev eth1): %v", err)
	}
	netlinkInfo = func() map[string]nlDevice { return map[string]nlDevice{} }
	devs, err = Devices()
	if err != nil || len(devs) != 1 || !slices.Equal(devs[0].Netdevs, []string{"eth0", "eth0.5"}) {
		t.Errorf("without netlink: %+v, %v; want Netdevs [eth0 eth0.5] from the GID table", devs, err)
	}
}

func TestDevicesFromSysfs(t *testing.T) {
	fakeSysfs(t, map[string]string{
		"verbs/abi_version":                 "6",
		"verbs/uverbs0/ibdev":               "rxe0",
		"verbs/uverbs0/abi_version":         "2",
		"verbs/uverbs1/ibdev":               "mlx5_0",
		"verbs/uverbs1/abi_version":         "1",
		"ib/rxe0/node_guid":                 "5054:00ff:fe77:0001",
		"ib/rxe0/parent":                    "eth0",
		"ib/rxe0/ports/1/gids/0":            "fe80:0000:0000:0000:5054:00ff:fe77:0001",
		"ib/rxe0/ports/1/gids/1":            "0000:0000:0000:0000:0000:ffff:0a4d:0001",
		"ib/rxe0/ports/1/gids/2":            "0000:0000:0000:0000:0000:0000:0000:0000",
		"ib/rxe0/ports/1/gid_attrs/types/0": "RoCE v2",
		"ib/rxe0/ports/1/gid_attrs/types/1": "RoCE v2",
		"ib/rxe0/ports/1/gid_attrs/ndevs/0": "eth0",
		"ib/rxe0/ports/1/gid_attrs/ndevs/1": "eth0",
		"ib/mlx5_0/node_guid":               "0000:0000:0000:0001",
	})
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 || devs[1].Name != "rxe0" || devs[1].Uverbs != "uverbs0" || devs[1].ABIVersion != 2 ||
		devs[1].Path != filepath.Join(sysRoot.Root, "dev/infiniband/uverbs0") || len(devs[1].Netdevs) != 1 || devs[1].Netdevs[0] != "eth0" {
		t.Fatalf("devices %+v", devs)
	}
	if d, err := LookupDevice(DeviceQuery{Netdev: "eth0"}); err != nil || d.Name != "rxe0" {
		t.Errorf("LookupDevice(Netdev eth0): %+v %v", d, err)
	}
	if _, err := LookupDevice(DeviceQuery{Name: "rxe9"}); !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "mlx5_0, rxe0") {
		t.Errorf("LookupDevice(Name rxe9): %v", err)
	}
	if d, err := LookupDevice(DeviceQuery{NodeGUID: 0x505400fffe770001}); err != nil || d.Name != "rxe0" {
		t.Errorf("LookupDevice(NodeGUID): %+v %v", d, err)
	}
	if _, err := LookupDevice(DeviceQuery{NodeGUID: 0x505400fffe770002}); !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "5054:00ff:fe77:0002") {
		t.Errorf("LookupDevice of a missing GUID: %v", err)
	}
	if d, err := LookupDevice(DeviceQuery{Name: "uverbs0", Netdev: "eth0", NodeGUID: 0x505400fffe770001}); err != nil || d.Name != "rxe0" {
		t.Errorf("LookupDevice by uverbs name, netdev and GUID: %+v %v", d, err)
	}
	if _, err := LookupDevice(DeviceQuery{Name: "rxe0", Netdev: "eth1"}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("LookupDevice(rxe0 on eth1): %v", err)
	}
	if _, err := LookupDevice(DeviceQuery{}); err == nil || !strings.Contains(err.Error(), "2 RDMA devices match any device (mlx5_0, rxe0)") {
		t.Errorf("LookupDevice of any of two devices: %v", err)
	}
	if _, err := Open(""); err == nil || !strings.Contains(err.Error(), "mlx5_0, rxe0") {
		t.Errorf(`Open("") with two devices: %v`, err)
	}
	if p, err := providerFor(devs[1]); err != nil || p != providerRXE {
		t.Errorf("rxe0 provider: %v %v", p, err)
	}
	if _, err := providerFor(devs[0]); !errors.Is(err, ErrNotSupported) {
		t.Errorf("mlx5 provider: %v", err)
	}
	if _, err := openDevice(devs[0]); !errors.Is(err, ErrNotSupported) {
		t.Errorf("openDevice(mlx5_0): %v", err)
	}
	if _, err := openDevice(devs[1]); !errors.Is(err, ErrNoDevice) {
		t.Errorf("openDevice without a device node: %v", err)
	}
	ents, err := gidTableSysfs("rxe0", 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 || ents[1].Index != 1 || ents[1].Type != GIDTypeRoCEv2 || ents[1].GID.Addr().String() != "10.77.0.1" || ents[1].Netdev != "eth0" {
		t.Errorf("gid table %+v", ents)
	}
}

func TestNoDevice(t *testing.T) {
	fakeSysfs(t, map[string]string{"unrelated": "x"})
	devs, err := Devices()
	if err != nil || len(devs) != 0 {
		t.Fatalf("Devices on a machine without RDMA: %v %v", devs, err)
	}
	_, err = Open("")
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Open: %v", err)
	}
	for _, hint := range []string{"modprobe rdma_rxe", "rdma link add rxe0 type rxe netdev"} {
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("no-device error %q does not say %q", err, hint)
		}
	}
	for _, own := range []string{"rdmalab", "rdmainfo"} {
		if strings.Contains(err.Error(), own) {
			t.Errorf("no-device error %q names this repository's command %s", err, own)
		}
	}
}

func TestABIVersionCheck(t *testing.T) {
	fakeSysfs(t, map[string]string{"verbs/abi_version": "5", "verbs/uverbs0/ibdev": "rxe0", "verbs/uverbs0/abi_version": "2", "ib/rxe0/parent": "eth0"})
	if _, err := Open("rxe0"); !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "ABI version 5") {
		t.Errorf("Open with uverbs ABI 5: %v", err)
	}
	fakeSysfs(t, map[string]string{"verbs/abi_version": "6", "verbs/uverbs0/ibdev": "rxe0", "verbs/uverbs0/abi_version": "7", "ib/rxe0/parent": "eth0"})
	if _, err := Open("rxe0"); !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "driver ABI version 7") {
		t.Errorf("Open with rxe ABI 7: %v", err)
	}
}

func TestMemlockHint(t *testing.T) {
	err := memlockHint(unix.ENOMEM, 1<<30)
	if !errors.Is(err, unix.ENOMEM) || !strings.Contains(err.Error(), "RLIMIT_MEMLOCK") || !strings.Contains(err.Error(), "ulimit -l") {
		t.Errorf("hint: %v", err)
	}
	if err := memlockHint(unix.EINVAL, 1); err != unix.EINVAL {
		t.Errorf("EINVAL rewritten: %v", err)
	}
}

func TestRegMRValidation(t *testing.T) {
	c, _ := testContext(t)
	pd := &PD{ctx: c}
	if _, err := pd.RegMR(nil, AccessLocalWrite); !errors.Is(err, unix.EINVAL) {
		t.Errorf("empty MR: %v", err)
	}
	if _, err := pd.RegMR(make([]byte, 8), AccessRemoteWrite); !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "LOCAL_WRITE") {
		t.Errorf("remote write without local write: %v", err)
	}
	if _, err := pd.RegMR(make([]byte, 8), AccessLocalWrite|AccessFlushGlobal); !errors.Is(err, ErrNotSupported) {
		t.Errorf("flush access without device support: %v", err)
	}
}

func TestParseNodeGUID(t *testing.T) {
	if g, err := sysfs.ParseGUID("5054:00ff:fe12:3456"); err != nil || g != 0x505400fffe123456 {
		t.Errorf("parse: %#x %v", g, err)
	}
	for _, bad := range []string{"", "5054:00ff:fe12", "5054:00ff:fe12:3456:0", "5054::fe12:3456", "505400:ff:fe12:3456", "zz54:00ff:fe12:3456"} {
		if _, err := sysfs.ParseGUID(bad); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}
