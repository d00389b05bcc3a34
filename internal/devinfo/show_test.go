// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/sysfs"
)

// TestShowFixtures renders each lab-captured tree with sysfs alone (no
// netlink, no uverbs) and compares it, field by field, with ibv_devinfo and
// ibv_devinfo -v captured in the same boot.
func TestShowFixtures(t *testing.T) {
	for _, name := range labFixtures(t) {
		t.Run(name, func(t *testing.T) {
			root := fixtureRoot(t, name)
			// The fixture keeps eight GID slots; ibv_devinfo saw the
			// whole table.
			b, _ := os.ReadFile(filepath.Join(root, "sys/class/infiniband/rxe0/ports/1/gid_tbl_len.capture"))
			tbl := strings.TrimSpace(string(b))
			s := &System{FS: sysfs.New(root)}
			infos, err := s.Show("")
			if err != nil {
				t.Fatal(err)
			}
			if len(infos) != 1 || infos[0].Netdevs[0] != "v0" {
				t.Fatalf("infos %+v", infos)
			}
			for _, verbose := range []bool{false, true} {
				var buf bytes.Buffer
				WriteShow(&buf, infos, verbose)
				ours := strings.Replace(buf.String(), "gid_tbl_len:\t\t8", "gid_tbl_len:\t\t"+tbl, 1)
				file := "ibv_devinfo.txt"
				if verbose {
					file = "ibv_devinfo-v.txt"
				}
				ref, err := os.ReadFile(filepath.Join("testdata", name, file))
				if err != nil {
					t.Fatal(err)
				}
				absent := union(absentWithoutVerbs, absentWithVerbs)
				// Without netlink the capability flags are unknown too.
				absent["device_cap_flags"], absent["device_cap_flags names"] = true, true
				n := compareDevinfo(t, ours, string(ref), absent)
				t.Logf("verbose=%v: %d fields agree with %s", verbose, n, file)
				if verbose && n < 15 {
					t.Errorf("only %d fields compared", n)
				}
			}
		})
	}
}

func TestKV(t *testing.T) {
	var b bytes.Buffer
	kv(&b, 1, "transport", 40, "x")
	kv(&b, 1, "max_total_mcast_qp_attach", 40, "y")
	kv(&b, 3, "state", 48, "z")
	kv(&b, 3, "port_cap_flags2", 48, "w")
	kv(&b, 0, "hca_id", 8, "rxe0")
	want := "\ttransport:\t\t\tx\n\tmax_total_mcast_qp_attach:\ty\n\t\t\tstate:\t\t\tz\n\t\t\tport_cap_flags2:\tw\nhca_id:\trxe0\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

func TestDecoders(t *testing.T) {
	names, unknown := DeviceCapNames(0x01223c76 | 1<<30)
	if strings.Join(names, ",") != "BAD_PKEY_CNTR,BAD_QKEY_CNTR,AUTO_PATH_MIG,CHANGE_PHY_PORT,UD_AV_PORT_ENFORCE,PORT_ACTIVE_EVENT,SYS_IMAGE_GUID,RC_RNR_NAK_GEN,SRQ_RESIZE,MEM_WINDOW,MEM_MGT_EXTENSIONS,MEM_WINDOW_TYPE_2B" || unknown != 1<<30 {
		t.Errorf("cap names %v unknown %#x", names, unknown)
	}
	for rate, want := range map[string][2]int{"10 Gb/sec (1X FDR10)": {1, 8}, "2.5 Gb/sec (1X)": {1, 1},
		"100 Gb/sec (4X EDR)": {2, 32}, "56 Gb/sec (4X FDR)": {2, 16}} {
		w, s, ok := ParseRate(rate)
		if !ok || w != want[0] || s != want[1] {
			t.Errorf("%q: %d %d %v", rate, w, s, ok)
		}
	}
	if _, _, ok := ParseRate("fast"); ok {
		t.Error("a rate without (WIDTH SPEED) was accepted")
	}
	for mtu, want := range map[int]int{1500: 1024, 9000: 4096, 1100: 512, 1104: 1024, 300: 0, 4176: 4096, 4175: 2048} {
		if got := MTUBytes(RXEActiveMTU(mtu)); got != want {
			t.Errorf("netdev MTU %d: active %d, want %d", mtu, got, want)
		}
	}
	if FWString(0x0001000200000003) != "1.2.3" && FWString(0x100020003) != "1.2.3" {
		t.Errorf("fw %s", FWString(0x100020003))
	}
}

func TestDevicesFixtures(t *testing.T) {
	for _, name := range labFixtures(t) {
		t.Run(name, func(t *testing.T) {
			s := &System{FS: sysfs.New(fixtureRoot(t, name))}
			devs, err := s.Devices()
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			WriteDevices(&buf, devs)
			ref, err := os.ReadFile(filepath.Join("testdata", name, "ibv_devices.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != string(ref) {
				t.Errorf("ours:\n%s\nibv_devices:\n%s", buf.String(), ref)
			}
		})
	}
}

func TestRates(t *testing.T) {
	prev := []Counter{{Dev: "rxe0", Port: 1, Kind: "hw", Name: "sent_pkts", Value: 100},
		{Dev: "rxe0", Port: 1, Kind: "hw", Name: "rcvd_pkts", Value: 50}}
	cur := []Counter{{Dev: "rxe0", Port: 1, Kind: "hw", Name: "sent_pkts", Value: 300},
		{Dev: "rxe0", Port: 1, Kind: "hw", Name: "rcvd_pkts", Value: 10},
		{Dev: "rxe0", Port: 1, Kind: "hw", Name: "new", Value: 7}}
	got := Rates(prev, cur, 2*time.Second)
	if got[0].Rate != 100 || got[1].Rate != 0 || got[2].Rate != 0 || got[0].Value != 300 {
		t.Errorf("rates %+v", got)
	}
	if cur[0].Rate != 0 {
		t.Error("Rates changed its input")
	}
	var buf bytes.Buffer
	WriteCounters(&buf, got, true)
	if !strings.Contains(buf.String(), "sent_pkts  300    100.0") {
		t.Errorf("table:\n%s", buf.String())
	}
}

func TestCountersFixtures(t *testing.T) {
	for _, name := range labFixtures(t) {
		t.Run(name, func(t *testing.T) {
			s := &System{FS: sysfs.New(fixtureRoot(t, name))}
			cs, err := s.Counters("")
			if err != nil {
				t.Fatal(err)
			}
			names, _ := os.ReadDir(filepath.Join("../sysfs/testdata", name, "sys/class/infiniband/rxe0/ports/1/hw_counters"))
			if len(cs) != len(names) || len(cs) < 10 {
				t.Fatalf("%d counters, the capture has %d files", len(cs), len(names))
			}
			for i, c := range cs {
				if c.Kind != "hw" || c.Dev != "rxe0" || c.Port != 1 || (i > 0 && cs[i-1].Name >= c.Name) {
					t.Errorf("counter %d: %+v", i, c)
				}
			}
			if _, err := s.Counters("nope"); err == nil {
				t.Error("counters of a missing device")
			}
		})
	}
}
