// Copyright 2026 The rdmago Authors.

package sysfs

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// The trees in testdata/lab-KERNEL are copies of the lab guest's sysfs and
// procfs files (made by a capture script run with `rdmalab run`); the
// ibv_devinfo output captured in the same boot lies in
// ../../tools/devinfo/testdata/lab-KERNEL. Device nodes are empty files there.

func fixtures(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob("testdata/lab-*")
	if len(dirs) == 0 {
		t.Fatal("no testdata/lab-* fixtures")
	}
	return dirs
}

// devinfoField returns the value ibv_devinfo -v printed for key (first match).
func devinfoField(t *testing.T, text, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(key) + `:\s*(.*?)\s*$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("ibv_devinfo printed no %s", key)
	}
	return m[1]
}

func TestDeviceFixtures(t *testing.T) {
	for _, dir := range fixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			ref, err := os.ReadFile(filepath.Join("../../tools/devinfo/testdata", filepath.Base(dir), "ibv_devinfo-v.txt"))
			if err != nil {
				t.Fatal(err)
			}
			text := string(ref)
			f := New(dir)
			names, err := f.DeviceNames()
			if err != nil {
				t.Fatal(err)
			}
			if want := devinfoField(t, text, "hca_id"); len(names) != 1 || names[0] != want {
				t.Fatalf("devices %q, ibv_devinfo shows %q", names, want)
			}
			d, err := f.Device(names[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ key, got string }{
				{"node_guid", d.NodeGUID.String()},
				{"sys_image_guid", d.SysImageGUID.String()},
				{"state", map[int]string{4: "PORT_ACTIVE (4)"}[d.Ports[0].State]},
				{"phys_state", map[int]string{5: "LINK_UP (5)"}[d.Ports[0].PhysState]},
				{"link_layer", d.Ports[0].LinkLayer},
				{"gid_tbl_len", itoa(d.Ports[0].GIDTableLen)},
				{"pkey_tbl_len", itoa(d.Ports[0].PKeyTableLen)},
				{"port_lmc", "0x0" + itoa(int(d.Ports[0].LMC))},
				{"sm_lid", itoa(int(d.Ports[0].SMLID))},
				{"port_lid", itoa(int(d.Ports[0].LID))},
				{"sm_sl", itoa(int(d.Ports[0].SMSL))},
			} {
				want := devinfoField(t, text, c.key)
				if c.key == "gid_tbl_len" {
					// The fixture keeps only the first eight and the valid
					// entries of the table; the capture recorded its length.
					if n, err := f.ReadString("/sys/class/infiniband/" + d.Name + "/ports/1/gid_tbl_len.capture"); err != nil || n != want {
						t.Errorf("captured gid_tbl_len %q (%v), ibv_devinfo %q", n, err, want)
					}
					if c.got != "8" {
						t.Errorf("fixture gid table length %s, want the 8 captured files", c.got)
					}
					continue
				}
				if c.got != want {
					t.Errorf("%s: sysfs gives %q, ibv_devinfo %q", c.key, c.got, want)
				}
			}
			if d.Uverbs != "uverbs0" {
				t.Errorf("uverbs device %q, want uverbs0", d.Uverbs)
			}
			if d.FWVer != "" {
				t.Errorf("rxe has no fw_ver in sysfs (ibv_devinfo's comes from QUERY_DEVICE), got %q", d.FWVer)
			}
			if d.NodeType != 1 || d.NodeTypeName != "CA" {
				t.Errorf("node type %d %q", d.NodeType, d.NodeTypeName)
			}
			// GIDs: ibv_devinfo prints "GID[  1]:		::ffff:10.77.0.1, RoCE v2".
			gre := regexp.MustCompile(`GID\[\s*(\d+)\]:\s*([^,\s]+), (RoCE v\d)`)
			want := gre.FindAllStringSubmatch(text, -1)
			gids := d.Ports[0].GIDs
			if len(gids) != len(want) || len(want) < 2 {
				t.Fatalf("%d GIDs, ibv_devinfo shows %d: %+v", len(gids), len(want), gids)
			}
			for i, w := range want {
				g := gids[i]
				if itoa(g.Index) != w[1] || g.GID.String() != w[2] || g.Type != w[3] {
					t.Errorf("GID %+v, ibv_devinfo shows %q", g, w[0])
				}
				if g.Netdev == "" || !g.RoCEv2() {
					t.Errorf("GID %d: netdev %q version %q", g.Index, g.Netdev, g.Version())
				}
			}
			if ip := gids[1].IP(); !ip.Is4() {
				t.Errorf("GID 1 %v is not IPv4-mapped", gids[1].GID)
			}
			c, hw, err := f.Counters(d.Name, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(c) != 0 || len(hw) < 10 {
				t.Errorf("rxe has no PMA counters and over ten hw_counters; got %d and %d", len(c), len(hw))
			}
			if _, ok := hw["sent_pkts"]; !ok {
				t.Errorf("hw_counters lack sent_pkts: %v", hw)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestSystemFixtures(t *testing.T) {
	for _, dir := range fixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f := New(dir)
			n, err := f.Netdev("v0")
			if err != nil {
				t.Fatal(err)
			}
			if n.MTU != 1500 || !n.AdminUp() || n.OperState != "up" || n.Carrier != 1 || n.Index == 0 {
				t.Errorf("v0: %+v", n)
			}
			mods, err := f.Modules()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{"rdma_rxe", "ib_uverbs", "rdma_ucm", "ib_core", "crc32_generic"} {
				if s := f.Module(m, mods, ""); s != ModuleLoaded {
					t.Errorf("module %s: %v, want loaded", m, s)
				}
			}
			if s := f.Module("no_such_module", mods, ""); s != ModuleMissing {
				t.Errorf("no_such_module: %v", s)
			}
			if ok, err := f.Crypto("crc32"); err != nil || !ok {
				t.Errorf("crc32 in /proc/crypto: %v %v", ok, err)
			}
			if ok, _ := f.Crypto("no-such-alg"); ok {
				t.Error("no-such-alg found in /proc/crypto")
			}
			if _, err := f.DevNode("/dev/infiniband/rdma_cm"); err != nil {
				t.Error(err)
			}
			if _, err := f.DevNode("/dev/infiniband/uverbs9"); !errors.Is(err, ErrNoDevNode) {
				t.Errorf("missing node: %v", err)
			}
		})
	}
}

func TestModuleBuiltin(t *testing.T) {
	root := t.TempDir()
	mk := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(s), 0o644)
	}
	mk("/proc/modules", "ib_core 1 0 - Live 0x0\n")
	mk("/lib/modules/6.0-x/modules.builtin", "kernel/crypto/crc32_generic.ko\n")
	mk("/lib/modules/6.0-x/modules.dep", "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko.xz: kernel/foo.ko\n")
	mk("/sys/module/configfs/parameters", "")
	f := New(root)
	mods, err := f.Modules()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]ModuleState{
		"ib_core": ModuleLoaded, "crc32-generic": ModuleBuiltin, "configfs": ModuleKnown,
		"rdma_rxe": ModuleLoadable, "rdma_ucm": ModuleMissing,
	} {
		if got := f.Module(name, mods, "6.0-x"); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

func TestParsers(t *testing.T) {
	g, err := ParseGUID("9877:cfff:fea1:a610")
	if err != nil || g != 0x9877cffffea1a610 || g.String() != "9877:cfff:fea1:a610" || g.Hex() != "9877cffffea1a610" {
		t.Errorf("GUID %v %v", g, err)
	}
	for _, bad := range []string{"", "1:2:3", "g:0:0:0", "10000:0:0:0"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("GUID %q accepted", bad)
		}
	}
	a, err := ParseGID("0000:0000:0000:0000:0000:ffff:0a4d:0001")
	if err != nil || a != netip.MustParseAddr("::ffff:10.77.0.1") {
		t.Errorf("GID %v %v", a, err)
	}
	if _, err := ParseGID("10.0.0.1"); err == nil {
		t.Error("an IPv4 address was accepted as a GID")
	}
	if n, name, err := parseNumName("4: ACTIVE"); n != 4 || name != "ACTIVE" || err != nil {
		t.Errorf("state %d %q %v", n, name, err)
	}
	if _, _, err := parseNumName("ACTIVE"); err == nil {
		t.Error("state without a number accepted")
	}
}

func TestNoRDMA(t *testing.T) {
	f := New(t.TempDir())
	if _, err := f.DeviceNames(); !errors.Is(err, ErrNoRDMA) {
		t.Errorf("empty root: %v", err)
	}
	os.MkdirAll(filepath.Join(f.Root, "sys/class/infiniband"), 0o755)
	if _, err := f.Device("rxe0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing device: %v", err)
	}
	if _, err := f.Device("../x"); err == nil {
		t.Error("a path in a device name was accepted")
	}
}
