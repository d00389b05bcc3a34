// Copyright 2026 The rdmago Authors.

package sysfs

import (
	"errors"
	"io/fs"
	"net/netip"
	"path/filepath"
	"reflect"
	"testing"
)

// The readers uverbs, cm and tools/trace use, on the lab's captured trees.
func TestClassReadersOnFixtures(t *testing.T) {
	for _, dir := range fixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f := New(dir)
			vs, err := f.VerbsDevices()
			want := []VerbsDevice{{Name: "uverbs0", IBDev: "rxe0", ABIVersion: 2, Dev: 231<<20 | 192}}
			if err != nil || !reflect.DeepEqual(vs, want) {
				t.Errorf("VerbsDevices = %+v, %v; want %+v", vs, err, want)
			}
			if v, err := f.ABIVersion(ClassVerbs); err != nil || v != 6 {
				t.Errorf("uverbs ABIVersion = %d, %v; want 6", v, err)
			}
			if _, err := f.ABIVersion("/sys/class/misc/rdma_cm"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("rdma_cm ABIVersion without the file: %v", err)
			}
			if n := f.Netdevs("rxe0"); !reflect.DeepEqual(n, []string{"v0"}) {
				t.Errorf("Netdevs = %q", n)
			}
			if p := f.Parent("rxe0"); p != "" {
				t.Errorf("Parent = %q from a tree without the attribute", p)
			}
			g, ok, err := f.GIDAt("rxe0", 1, 1)
			wantGID := GID{Index: 1, GID: netip.MustParseAddr("::ffff:10.77.0.1"), Type: "RoCE v2", Netdev: "v0"}
			if err != nil || !ok || g != wantGID {
				t.Errorf("GIDAt(1) = %+v %v %v; want %+v", g, ok, err, wantGID)
			}
			if g, ok, err := f.GIDAt("rxe0", 1, 7); err != nil || !ok || !g.GID.IsUnspecified() || g.Type != "" || g.Netdev != "" {
				t.Errorf("GIDAt(7), an empty slot = %+v %v %v", g, ok, err)
			}
			if g, ok, err := f.GIDAt("rxe0", 1, 100); err != nil || ok {
				t.Errorf("GIDAt(100), not in the tree = %+v %v %v", g, ok, err)
			}
			hw, err := f.HWCounters(nil)
			if err != nil || len(hw) != 1 || hw[0].Dev != "rxe0" || hw[0].Port != 1 {
				t.Fatalf("HWCounters = %+v, %v", hw, err)
			}
			if _, want, err := f.Counters("rxe0", 1); err != nil || len(want) < 10 || !reflect.DeepEqual(hw[0].Values, want) {
				t.Errorf("HWCounters values %v, Counters says %v (%v)", hw[0].Values, want, err)
			}
			if _, err := f.HWCounters([]string{"rxe9"}); err == nil {
				t.Error("HWCounters of a missing device: no error")
			}
		})
	}
}

func TestUverbsDevicesMap(t *testing.T) {
	for _, dir := range fixtures(t) {
		m, err := New(dir).UverbsDevices()
		if err != nil || !reflect.DeepEqual(m, map[string]string{"rxe0": "uverbs0"}) {
			t.Errorf("%s: UverbsDevices = %v, %v", dir, m, err)
		}
	}
	if m, err := New(t.TempDir()).UverbsDevices(); err != nil || len(m) != 0 {
		t.Errorf("without ib_uverbs: %v, %v", m, err)
	}
}

func TestUniqueNames(t *testing.T) {
	got := UniqueNames([]string{"", "eth0", "v0", "eth0", "", "v0.5"})
	if want := []string{"eth0", "v0", "v0.5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("UniqueNames = %q, want %q", got, want)
	}
	if got := UniqueNames([]string{"", ""}); len(got) != 0 {
		t.Errorf("UniqueNames of empty names = %q", got)
	}
}
