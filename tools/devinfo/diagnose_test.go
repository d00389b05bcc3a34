// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// want is what a scenario expects of one check: its verdict and a piece of
// its fix.
type want struct {
	v   Verdict
	fix string
}

// expect runs Diagnose and checks that the listed checks have the expected
// verdicts and fixes, and that every other check is OK.
func expect(t *testing.T, s *System, wants map[string]want) Report {
	t.Helper()
	r := s.Diagnose()
	var buf bytes.Buffer
	WriteReport(&buf, r)
	seen := map[string]bool{}
	for _, c := range r.Checks {
		seen[c.ID] = true
		w, ok := wants[c.ID]
		if !ok {
			if c.Verdict != OK {
				t.Errorf("%s: %s (%s), want ok", c.ID, c.Verdict, c.Detail)
			}
			continue
		}
		if c.Verdict != w.v {
			t.Errorf("%s: %s (%s), want %s", c.ID, c.Verdict, c.Detail, w.v)
		}
		if c.Verdict != OK && (c.Fix == "" || !strings.Contains(c.Fix, w.fix)) {
			t.Errorf("%s: fix %q, want one containing %q", c.ID, c.Fix, w.fix)
		}
	}
	for id := range wants {
		if !seen[id] {
			t.Errorf("no check %s", id)
		}
	}
	blocking := false
	for _, w := range wants {
		if w.v == Fail {
			blocking = true
		}
	}
	if r.Blocking() != blocking {
		t.Errorf("Blocking() = %v, want %v", r.Blocking(), blocking)
	}
	if t.Failed() {
		t.Logf("report:\n%s", buf.String())
	}
	return r
}

func TestDiagnoseAllClear(t *testing.T) {
	for _, name := range labFixtures(t) {
		t.Run(name, func(t *testing.T) {
			s, _ := fixtureSystem(t, name)
			r := expect(t, s, nil)
			for _, id := range []string{"kernel", "module/ib_core", "module/ib_uverbs", "module/rdma_ucm", "module/rdma_rxe",
				"crc32", "devices", "uverbs/rxe0", "rdma_cm", "port/rxe0/1", "netdev/rxe0/1", "mtu/rxe0/1", "addr/rxe0/1",
				"gid/rxe0/1/10.77.0.1", "memlock"} {
				if _, ok := r.Find(id); !ok {
					t.Errorf("all-clear report lacks check %s", id)
				}
			}
			c, _ := r.Find("mtu/rxe0/1")
			if !strings.Contains(c.Detail, "MTU 1500 gives an active RDMA MTU of 1024") {
				t.Errorf("mtu: %s", c.Detail)
			}
			var buf bytes.Buffer
			WriteReport(&buf, r)
			if !strings.Contains(buf.String(), "all clear") {
				t.Errorf("report:\n%s", buf.String())
			}
		})
	}
}

// TestDiagnoseProblems breaks a copy of the lab capture in one way per case
// and checks that exactly that problem is reported, with its fix.
func TestDiagnoseProblems(t *testing.T) {
	name := labFixtures(t)[0]
	port := "sys/class/infiniband/rxe0/ports/1"
	cases := []struct {
		name   string
		break_ func(t *testing.T, s *System, root string)
		wants  map[string]want
	}{
		{"netdev down", func(t *testing.T, s *System, root string) {
			writeFile(t, root, port+"/state", "1: DOWN\n")
			writeFile(t, root, port+"/phys_state", "3: Disabled\n")
			writeFile(t, root, "sys/class/net/v0/flags", "0x1002\n")
			writeFile(t, root, "sys/class/net/v0/operstate", "down\n")
			removeAll(t, root, "sys/class/net/v0/carrier")
		}, map[string]want{"port/rxe0/1": {Fail, "ip link set v0 up"}, "netdev/rxe0/1": {Fail, "ip link set v0 up"}}},
		{"veth peer down", func(t *testing.T, s *System, root string) {
			writeFile(t, root, port+"/state", "1: DOWN\n")
			writeFile(t, root, "sys/class/net/v0/operstate", "lowerlayerdown\n")
		}, map[string]want{"port/rxe0/1": {Fail, "peer"}, "netdev/rxe0/1": {Fail, "peer"}}},
		{"rdma_ucm missing", func(t *testing.T, s *System, root string) {
			dropModule(t, root, "rdma_ucm")
		}, map[string]want{"module/rdma_ucm": {Fail, "modprobe rdma_ucm"}}},
		{"ib_uverbs missing", func(t *testing.T, s *System, root string) {
			dropModule(t, root, "ib_uverbs")
			removeAll(t, root, "sys/class/infiniband_verbs", "dev/infiniband/uverbs0")
		}, map[string]want{"module/ib_uverbs": {Fail, "modprobe ib_uverbs"}, "uverbs/rxe0": {Fail, "modprobe ib_uverbs"}}},
		{"fresh host without rxe and crc32", func(t *testing.T, s *System, root string) {
			dropModule(t, root, "rdma_rxe")
			for _, m := range []string{"crc32_generic", "crc32_pclmul"} {
				dropModule(t, root, m)
			}
			b, _ := os.ReadFile(filepath.Join(root, "proc/crypto"))
			writeFile(t, root, "proc/crypto", strings.ReplaceAll(string(b), ": crc32\n", ": crc32-gone\n"))
			removeAll(t, root, "sys/class/infiniband/rxe0", "sys/class/infiniband_verbs/uverbs0", "dev/infiniband/uverbs0")
			s.NL = &fakeNL{}
		}, map[string]want{"module/rdma_rxe": {Fail, "modprobe rdma_rxe"}, "crc32": {Fail, "crc32_generic"},
			"devices": {Fail, "rdmainfo link add rxe0 type rxe netdev"}}},
		{"fresh 6.15+ host without rxe and crc32", func(t *testing.T, s *System, root string) {
			writeFile(t, root, "proc/sys/kernel/osrelease", "6.16.3-amd64\n")
			dropModule(t, root, "rdma_rxe")
			b, _ := os.ReadFile(filepath.Join(root, "proc/crypto"))
			writeFile(t, root, "proc/crypto", strings.ReplaceAll(string(b), ": crc32\n", ": crc32-gone\n"))
			removeAll(t, root, "sys/class/infiniband/rxe0", "sys/class/infiniband_verbs/uverbs0", "dev/infiniband/uverbs0")
			s.NL = &fakeNL{}
		}, map[string]want{"module/rdma_rxe": {Fail, "modprobe rdma_rxe"}, "crc32": {OK, ""},
			"devices": {Fail, "rdmainfo link add rxe0 type rxe netdev"}}},
		{"no RDMA in the kernel", func(t *testing.T, s *System, root string) {
			removeAll(t, root, "sys/class/infiniband", "sys/class/infiniband_verbs", "dev/infiniband", "sys/class/misc/rdma_cm")
			for _, m := range []string{"ib_core", "ib_uverbs", "rdma_ucm", "rdma_rxe"} {
				dropModule(t, root, m)
			}
			s.NL = nil
		}, map[string]want{"kernel": {Fail, "modprobe ib_core"}, "module/ib_core": {Fail, "modprobe ib_core"},
			"module/ib_uverbs": {Fail, "modprobe ib_uverbs"}, "module/rdma_ucm": {Fail, "modprobe rdma_ucm"},
			"module/rdma_rxe": {Fail, "modprobe rdma_rxe"}, "devices": {Fail, "RDMA stack"}}},
		{"device nodes not for this user", func(t *testing.T, s *System, root string) {
			for _, n := range []string{"uverbs0", "rdma_cm"} {
				if err := os.Chmod(filepath.Join(root, "dev/infiniband", n), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s.Creds = Creds{UID: uint32(os.Getuid()) + 1000, GIDs: []uint32{54321}}
		}, map[string]want{"uverbs/rxe0": {Fail, "chmod 0666 /dev/infiniband/uverbs0"}, "rdma_cm": {Fail, "chmod 0666 /dev/infiniband/rdma_cm"}}},
		{"device nodes for the user's group", func(t *testing.T, s *System, root string) {
			for _, n := range []string{"uverbs0", "rdma_cm"} {
				if err := os.Chmod(filepath.Join(root, "dev/infiniband", n), 0o660); err != nil {
					t.Fatal(err)
				}
			}
			s.Creds = Creds{UID: uint32(os.Getuid()) + 1000, GIDs: []uint32{54321, uint32(os.Getgid())}}
		}, nil},
		{"open refused", func(t *testing.T, s *System, root string) {
			s.Open = func(p string) error {
				if strings.HasSuffix(p, "rdma_cm") {
					return &os.PathError{Op: "open", Path: p, Err: syscall.EACCES}
				}
				return nil
			}
		}, map[string]want{"rdma_cm": {Fail, "chmod 0666 /dev/infiniband/rdma_cm"}}},
		{"rdma_cm node missing", func(t *testing.T, s *System, root string) {
			removeAll(t, root, "dev/infiniband/rdma_cm")
		}, map[string]want{"rdma_cm": {Fail, "mknod -m 0666 /dev/infiniband/rdma_cm c 10 "}}},
		{"memlock 64 KiB", func(t *testing.T, s *System, root string) {
			s.Memlock = func() (uint64, uint64, error) { return 64 << 10, 64 << 10, nil }
		}, map[string]want{"memlock": {Fail, "ulimit -l unlimited"}}},
		{"memlock 64 KiB with CAP_IPC_LOCK", func(t *testing.T, s *System, root string) {
			s.Memlock = func() (uint64, uint64, error) { return 64 << 10, 64 << 10, nil }
			s.Creds.CapIPCLck = true
		}, map[string]want{"memlock": {Warn, "limits.conf"}}},
		{"memlock 8 MiB", func(t *testing.T, s *System, root string) {
			s.Memlock = func() (uint64, uint64, error) { return 8 << 20, UnlimitedMemlock, nil }
		}, map[string]want{"memlock": {Warn, "ulimit -l unlimited"}}},
		{"no IPv4 address", func(t *testing.T, s *System, root string) {
			s.Addrs = StaticAddrs{"v0": {netip.MustParsePrefix("fe80::1/64")}}
		}, map[string]want{"addr/rxe0/1": {Warn, "ip addr add ADDRESS/PREFIX dev v0"}, "gid/rxe0/1/fe80::1": {Fail, "ip addr del fe80::1/64 dev v0"}}},
		{"address without a GID", func(t *testing.T, s *System, root string) {
			a := s.Addrs.(StaticAddrs)
			a["v0"] = append(a["v0"], netip.MustParsePrefix("10.9.9.9/24"))
		}, map[string]want{"gid/rxe0/1/10.9.9.9": {Fail, "ip addr add 10.9.9.9/24 dev v0"}}},
		{"RoCE v1 GID only", func(t *testing.T, s *System, root string) {
			writeFile(t, root, port+"/gid_attrs/types/1", "IB/RoCE v1\n")
		}, map[string]want{"gid/rxe0/1/10.77.0.1": {Warn, "default_roce_mode"}}},
		{"small netdev MTU", func(t *testing.T, s *System, root string) {
			writeFile(t, root, "sys/class/net/v0/mtu", "1000\n")
		}, map[string]want{"mtu/rxe0/1": {Warn, "mtu 1500"}}},
		// rdma_cm takes 96 bytes of RoCE headers off the netdev MTU and
		// refuses a route below 256 (RoCERouteMTU), while rxe takes 80 and
		// reports 256 anyway: 300–351 looks fine to the port and fails.
		{"netdev MTU 300, the device reports 256", func(t *testing.T, s *System, root string) {
			writeFile(t, root, "sys/class/net/v0/mtu", "300\n")
			s.Verbs = fixedVerbs{VerbsInfo{Ports: []PortAttr{{Port: 1, State: 4, MaxMTU: 5, ActiveMTU: 1}}}}
		}, map[string]want{"mtu/rxe0/1": {Fail, "ip link set v0 mtu 1500"}}},
		{"netdev MTU 351", func(t *testing.T, s *System, root string) {
			writeFile(t, root, "sys/class/net/v0/mtu", "351\n")
		}, map[string]want{"mtu/rxe0/1": {Fail, "ip link set v0 mtu 1500"}}},
		{"netdev MTU 352", func(t *testing.T, s *System, root string) {
			writeFile(t, root, "sys/class/net/v0/mtu", "352\n")
		}, map[string]want{"mtu/rxe0/1": {Warn, "ip link set v0 mtu 1500"}}},
		{"no netlink", func(t *testing.T, s *System, root string) {
			s.NL, s.NLErr = nil, errTest
		}, map[string]want{"netlink": {Warn, "NETLINK_RDMA"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, root := fixtureSystem(t, name)
			c.break_(t, s, root)
			expect(t, s, c.wants)
		})
	}
}

// dropModule removes module m from the capture's /proc/modules and
// /sys/module, as if it had never been loaded.
func dropModule(t *testing.T, root, m string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "proc/modules"))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if !strings.HasPrefix(l, m+" ") {
			keep = append(keep, l)
		}
	}
	if len(keep) == len(strings.Split(strings.TrimRight(string(b), "\n"), "\n")) {
		t.Fatalf("module %s is not in the capture's /proc/modules", m)
	}
	writeFile(t, root, "proc/modules", strings.Join(keep, "\n")+"\n")
	removeAll(t, root, "sys/module/"+m)
}

// TestDiagnoseNodeMode: the device nodes' permissions print as the octal
// mode chmod takes, four digits, whatever the bits.
func TestDiagnoseNodeMode(t *testing.T) {
	for _, c := range []struct {
		mode   os.FileMode
		detail string
	}{
		{0o666, "/dev/infiniband/rdma_cm (0666) opens read-write"},
		{0o066, "/dev/infiniband/rdma_cm (0066) opens read-write"},
		{0o006, "/dev/infiniband/rdma_cm (0006) opens read-write"},
		{0, "/dev/infiniband/rdma_cm is 0000 owned by"},
	} {
		s, root := fixtureSystem(t, labFixtures(t)[0])
		if err := os.Chmod(filepath.Join(root, "dev/infiniband/rdma_cm"), c.mode); err != nil {
			t.Fatal(err)
		}
		s.Creds = Creds{UID: uint32(os.Getuid()) + 1000, GIDs: []uint32{54321}}
		if got, _ := s.Diagnose().Find("rdma_cm"); !strings.Contains(got.Detail, c.detail) {
			t.Errorf("mode %#o: rdma_cm: %q, want %q", c.mode, got.Detail, c.detail)
		}
	}
}
