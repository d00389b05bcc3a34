// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/internal/sysfs"
)

// fakeNL answers netlink from iproute2's `rdma -j dev show` and `rdma -j
// link show` captured in the lab (testdata/lab-*/rdma-{dev,link}.json).
type fakeNL struct {
	devs  []rdmanl.Device
	ports map[uint32][]rdmanl.Port
	added []string
	del   []uint32
	err   error
}

func (f *fakeNL) Devices() ([]rdmanl.Device, error)       { return f.devs, f.err }
func (f *fakeNL) Ports(dev uint32) ([]rdmanl.Port, error) { return f.ports[dev], f.err }
func (f *fakeNL) AddLink(name, typ, netdev string) error {
	f.added = append(f.added, name+" "+typ+" "+netdev)
	return f.err
}
func (f *fakeNL) DelLink(dev uint32) error                 { f.del = append(f.del, dev); return f.err }
func (f *fakeNL) ResSummary() ([]rdmanl.ResSummary, error) { return nil, f.err }
func (f *fakeNL) QPs(uint32) ([]rdmanl.QP, error)          { return nil, f.err }
func (f *fakeNL) CQs(uint32) ([]rdmanl.CQ, error)          { return nil, f.err }
func (f *fakeNL) MRs(uint32) ([]rdmanl.MR, error)          { return nil, f.err }
func (f *fakeNL) PDs(uint32) ([]rdmanl.PD, error)          { return nil, f.err }
func (f *fakeNL) CMIDs(uint32) ([]rdmanl.CMID, error)      { return nil, f.err }
func (f *fakeNL) SRQs(uint32) ([]rdmanl.SRQ, error)        { return nil, f.err }

func loadFakeNL(t *testing.T, name string) *fakeNL {
	t.Helper()
	var devs []struct {
		Index uint32 `json:"ifindex"`
		Name  string `json:"ifname"`
		GUID  string `json:"node_guid"`
		Sys   string `json:"sys_image_guid"`
	}
	var links []struct {
		Index       uint32 `json:"ifindex"`
		Name        string `json:"ifname"`
		Port        uint32 `json:"port"`
		State       string `json:"state"`
		Phys        string `json:"physical_state"`
		Netdev      string `json:"netdev"`
		NetdevIndex uint32 `json:"netdev_index"`
	}
	for file, v := range map[string]any{"rdma-dev.json": &devs, "rdma-link.json": &links} {
		b, err := os.ReadFile(filepath.Join("testdata", name, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	f := &fakeNL{ports: map[uint32][]rdmanl.Port{}}
	for _, d := range devs {
		g, _ := sysfs.ParseGUID(d.GUID)
		sg, _ := sysfs.ParseGUID(d.Sys)
		f.devs = append(f.devs, rdmanl.Device{Index: d.Index, Name: d.Name, NodeGUID: uint64(g), SysImageGUID: uint64(sg), Ports: 1, NodeType: 1})
	}
	for _, l := range links {
		st := map[string]rdmanl.PortState{"ACTIVE": rdmanl.IB_PORT_ACTIVE, "DOWN": rdmanl.IB_PORT_DOWN}[l.State]
		ph := map[string]uint8{"LINK_UP": 5, "DISABLED": 3}[l.Phys]
		f.ports[l.Index] = append(f.ports[l.Index], rdmanl.Port{DevIndex: l.Index, DevName: l.Name, Index: l.Port,
			State: st, PhysState: ph, NetdevName: l.Netdev, NetdevIndex: l.NetdevIndex})
	}
	return f
}

// loadAddrs reads the capture's `ip -j addr`.
func loadAddrs(t *testing.T, root string) StaticAddrs {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "ip-addr.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ifs []struct {
		Name  string `json:"ifname"`
		Addrs []struct {
			Local  string `json:"local"`
			Prefix int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(b, &ifs); err != nil {
		t.Fatal(err)
	}
	m := StaticAddrs{}
	for _, i := range ifs {
		for _, a := range i.Addrs {
			m[i.Name] = append(m[i.Name], netip.PrefixFrom(netip.MustParseAddr(a.Local), a.Prefix))
		}
	}
	return m
}

// fixtureSystem is a System over a copy of a lab capture, with everything
// fine: root, unlimited memlock, nodes that open.
func fixtureSystem(t *testing.T, name string) (*System, string) {
	t.Helper()
	root := fixtureRoot(t, name)
	return &System{
		FS:      sysfs.New(root),
		NL:      loadFakeNL(t, name),
		Addrs:   loadAddrs(t, root),
		Creds:   Creds{UID: 0},
		Memlock: func() (uint64, uint64, error) { return UnlimitedMemlock, UnlimitedMemlock, nil },
		Open:    func(string) error { return nil },
	}, root
}

func writeFile(t *testing.T, root, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func removeAll(t *testing.T, root string, ps ...string) {
	t.Helper()
	for _, p := range ps {
		if err := os.RemoveAll(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
}

var errTest = errors.New("test error")
