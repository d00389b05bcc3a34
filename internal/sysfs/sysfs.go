// Copyright 2026 The rdmago Authors.

// Package sysfs reads what the kernel publishes about RDMA devices in sysfs,
// procfs and /dev: the files ibv_devinfo, show_gids and rdma-core's udev
// rules read (drivers/infiniband/core/sysfs.c, uverbs_main.c), plus the
// network devices and modules under them. It is the library's one sysfs
// reader: uverbs, cm and the tools read RDMA sysfs only through it, and node
// GUIDs are parsed and formatted only here (GUID).
//
// Every read goes through an FS rooted at a directory, "/" for the running
// system, so the same code runs on fixture trees captured in the lab
// (testdata/lab-*). Nothing here needs privileges or RDMA hardware, and
// nothing opens a character device.
package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// FS is a file-system root holding sys/, proc/, dev/ and lib/modules/.
type FS struct {
	Root string
}

// New returns the FS rooted at root ("/" for the live system).
func New(root string) FS { return FS{Root: root} }

// Path returns the location of the absolute system path p (such as
// "/sys/class/infiniband") under the root.
func (f FS) Path(p string) string {
	if f.Root == "" {
		return p
	}
	return filepath.Join(f.Root, p)
}

// ReadString returns the contents of system path p without the trailing
// newline.
func (f FS) ReadString(p string) (string, error) {
	b, err := os.ReadFile(f.Path(p))
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// readOpt reads p, returning "" when it does not exist or cannot be read
// (sysfs answers EINVAL for attributes without a value, such as the type of
// an empty GID slot or the carrier of a down link).
func (f FS) readOpt(p string) string {
	s, err := f.ReadString(p)
	if err != nil {
		return ""
	}
	return s
}

// Exists reports whether system path p exists.
func (f FS) Exists(p string) bool {
	_, err := os.Stat(f.Path(p))
	return err == nil
}

// List returns the names in directory p, sorted (numerically when all are
// numbers).
func (f FS) List(p string) ([]string, error) {
	names, err := listDir(f.Path(p))
	if err != nil {
		return nil, err
	}
	sortNames(names)
	return names, nil
}

func sortNames(names []string) {
	sort.Slice(names, func(i, j int) bool {
		a, erra := strconv.Atoi(names[i])
		b, errb := strconv.Atoi(names[j])
		if erra == nil && errb == nil {
			return a < b
		}
		return names[i] < names[j]
	})
}

// GUID is a 64-bit InfiniBand GUID (node_guid, sys_image_guid).
type GUID uint64

// ParseGUID parses the sysfs form "9877:cfff:fea1:a610".
func ParseGUID(s string) (GUID, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 4 {
		return 0, fmt.Errorf("GUID %q: want four colon-separated 16-bit groups", s)
	}
	var g uint64
	for _, p := range parts {
		v, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			return 0, fmt.Errorf("GUID %q: %w", s, err)
		}
		g = g<<16 | v
	}
	return GUID(g), nil
}

// String is the sysfs and ibv_devinfo form, "9877:cfff:fea1:a610".
func (g GUID) String() string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", uint16(g>>48), uint16(g>>32), uint16(g>>16), uint16(g))
}

// Hex is the ibv_devices form, "9877cffffea1a610".
func (g GUID) Hex() string { return fmt.Sprintf("%016x", uint64(g)) }

// MarshalText makes JSON use the colon form.
func (g GUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// Device is one RDMA device under /sys/class/infiniband.
type Device struct {
	Name         string `json:"name"`
	NodeType     int    `json:"node_type"`      // node_type "1: CA": RDMA_NODE_IB_CA ...
	NodeTypeName string `json:"node_type_name"` // "CA", "RNIC", ...
	NodeGUID     GUID   `json:"node_guid"`
	SysImageGUID GUID   `json:"sys_image_guid"`
	FWVer        string `json:"fw_ver,omitempty"`
	HWRev        string `json:"hw_rev,omitempty"` // absent on rxe
	NodeDesc     string `json:"node_desc,omitempty"`
	BoardID      string `json:"board_id,omitempty"`
	HCAType      string `json:"hca_type,omitempty"`
	Uverbs       string `json:"uverbs,omitempty"` // "uverbs0": its /dev/infiniband node, "" if ib_uverbs is not loaded
	Ports        []Port `json:"ports"`
}

// Port is one port of a device, /sys/class/infiniband/DEV/ports/N.
type Port struct {
	Num           int      `json:"port"`
	State         int      `json:"state"` // enum ib_port_state: 4 is ACTIVE
	StateName     string   `json:"state_name"`
	PhysState     int      `json:"phys_state"` // 5 is LinkUp
	PhysStateName string   `json:"phys_state_name"`
	LID           uint32   `json:"lid"`
	SMLID         uint32   `json:"sm_lid"`
	LMC           uint8    `json:"lmc"`
	SMSL          uint8    `json:"sm_sl"`
	CapMask       uint32   `json:"cap_mask"`
	LinkLayer     string   `json:"link_layer"` // "Ethernet" or "InfiniBand"
	Rate          string   `json:"rate"`       // "10 Gb/sec (1X FDR10)"
	GIDTableLen   int      `json:"gid_tbl_len"`
	PKeys         []uint16 `json:"pkeys,omitempty"`
	PKeyTableLen  int      `json:"pkey_tbl_len"`
	GIDs          []GID    `json:"gids"` // the valid (non-zero) entries
}

// Active reports whether the port state is ACTIVE.
func (p Port) Active() bool { return p.State == 4 }

// GID is one valid entry of a port's GID table.
type GID struct {
	Index  int        `json:"index"`
	GID    netip.Addr `json:"gid"`              // the 16-byte GID as an IPv6 address
	Type   string     `json:"type,omitempty"`   // gid_attrs/types: "IB/RoCE v1" or "RoCE v2"
	Netdev string     `json:"netdev,omitempty"` // gid_attrs/ndevs: the netdev the entry was made from
}

// Version is "v1" or "v2" (RoCE), "" when the type is unknown.
func (g GID) Version() string {
	switch {
	case strings.Contains(g.Type, "v2"):
		return "v2"
	case strings.Contains(g.Type, "v1"):
		return "v1"
	}
	return ""
}

// RoCEv2 reports whether the entry is a RoCE v2 GID.
func (g GID) RoCEv2() bool { return g.Version() == "v2" }

// IP returns the IP address the GID stands for: the IPv4 address of an
// IPv4-mapped GID, else the GID as an IPv6 address.
func (g GID) IP() netip.Addr { return g.GID.Unmap() }

// ErrNoRDMA means the kernel publishes no RDMA class at all: no
// CONFIG_INFINIBAND, or ib_core is not loaded.
var ErrNoRDMA = errors.New("no /sys/class/infiniband: the kernel has no RDMA support loaded (modprobe ib_core, or a kernel with CONFIG_INFINIBAND)")

// DeviceNames lists the RDMA devices, sorted.
func (f FS) DeviceNames() ([]string, error) {
	names, err := f.List("/sys/class/infiniband")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoRDMA
	}
	if err != nil {
		return nil, fmt.Errorf("list rdma devices: %w", err)
	}
	return names, nil
}

// Devices reads every RDMA device.
func (f FS) Devices() ([]Device, error) {
	names, err := f.DeviceNames()
	if err != nil {
		return nil, err
	}
	devs := make([]Device, 0, len(names))
	for _, n := range names {
		d, err := f.Device(n)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// parseNumName parses "4: ACTIVE" (state, phys_state, node_type).
func parseNumName(s string) (int, string, error) {
	num, name, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if !ok || err != nil {
		return 0, "", fmt.Errorf("%q: want \"N: NAME\"", s)
	}
	return n, strings.TrimSpace(name), nil
}

// parseUint parses a decimal or 0x-prefixed number.
func parseUint(s string, bits int) (uint64, error) {
	return strconv.ParseUint(strings.TrimSpace(s), 0, bits)
}

// Device reads /sys/class/infiniband/NAME.
func (f FS) Device(name string) (Device, error) {
	if name == "" || strings.ContainsAny(name, "/") || name == "." || name == ".." {
		return Device{}, fmt.Errorf("rdma device name %q is not valid", name)
	}
	base := "/sys/class/infiniband/" + name
	if !f.Exists(base) {
		if _, err := f.DeviceNames(); err != nil {
			return Device{}, err
		}
		return Device{}, fmt.Errorf("rdma device %q: %w (see `rdmainfo devices`)", name, fs.ErrNotExist)
	}
	d := Device{Name: name}
	var err error
	if s := f.readOpt(base + "/node_type"); s != "" {
		if d.NodeType, d.NodeTypeName, err = parseNumName(s); err != nil {
			return Device{}, fmt.Errorf("%s node_type: %w", name, err)
		}
	}
	if s := f.readOpt(base + "/node_guid"); s != "" {
		if d.NodeGUID, err = ParseGUID(s); err != nil {
			return Device{}, fmt.Errorf("%s node_guid: %w", name, err)
		}
	}
	if s := f.readOpt(base + "/sys_image_guid"); s != "" {
		if d.SysImageGUID, err = ParseGUID(s); err != nil {
			return Device{}, fmt.Errorf("%s sys_image_guid: %w", name, err)
		}
	}
	d.FWVer = f.readOpt(base + "/fw_ver")
	d.HWRev = f.readOpt(base + "/hw_rev")
	d.NodeDesc = f.readOpt(base + "/node_desc")
	d.BoardID = f.readOpt(base + "/board_id")
	d.HCAType = f.readOpt(base + "/hca_type")
	uv, err := f.UverbsDevices()
	if err != nil {
		return Device{}, err
	}
	d.Uverbs = uv[name]
	ports, err := f.List(base + "/ports")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Device{}, fmt.Errorf("%s ports: %w", name, err)
	}
	for _, pn := range ports {
		n, err := strconv.Atoi(pn)
		if err != nil {
			continue
		}
		p, err := f.Port(name, n)
		if err != nil {
			return Device{}, err
		}
		d.Ports = append(d.Ports, p)
	}
	return d, nil
}

// Port reads /sys/class/infiniband/DEV/ports/N, including its GID table.
func (f FS) Port(dev string, num int) (Port, error) {
	base := fmt.Sprintf("/sys/class/infiniband/%s/ports/%d", dev, num)
	if !f.Exists(base) {
		return Port{}, fmt.Errorf("rdma device %s has no port %d: %w", dev, num, fs.ErrNotExist)
	}
	p := Port{Num: num}
	bad := func(what string, err error) (Port, error) {
		return Port{}, fmt.Errorf("%s port %d %s: %w", dev, num, what, err)
	}
	var err error
	if s := f.readOpt(base + "/state"); s != "" {
		if p.State, p.StateName, err = parseNumName(s); err != nil {
			return bad("state", err)
		}
	}
	if s := f.readOpt(base + "/phys_state"); s != "" {
		if p.PhysState, p.PhysStateName, err = parseNumName(s); err != nil {
			return bad("phys_state", err)
		}
	}
	for _, u := range []struct {
		file string
		bits int
		set  func(uint64)
	}{
		{"lid", 32, func(v uint64) { p.LID = uint32(v) }},
		{"sm_lid", 32, func(v uint64) { p.SMLID = uint32(v) }},
		{"lid_mask_count", 8, func(v uint64) { p.LMC = uint8(v) }},
		{"sm_sl", 8, func(v uint64) { p.SMSL = uint8(v) }},
		{"cap_mask", 32, func(v uint64) { p.CapMask = uint32(v) }},
	} {
		s := f.readOpt(base + "/" + u.file)
		if s == "" {
			continue
		}
		v, err := parseUint(s, u.bits)
		if err != nil {
			return bad(u.file, err)
		}
		u.set(v)
	}
	p.LinkLayer = f.readOpt(base + "/link_layer")
	p.Rate = f.readOpt(base + "/rate")
	pkeys, _ := f.List(base + "/pkeys")
	p.PKeyTableLen = len(pkeys)
	for _, k := range pkeys {
		v, err := parseUint(f.readOpt(base+"/pkeys/"+k), 16)
		if err == nil && v != 0 {
			p.PKeys = append(p.PKeys, uint16(v))
		}
	}
	gids, _ := f.List(base + "/gids")
	p.GIDTableLen = len(gids)
	for _, g := range gids {
		idx, err := strconv.Atoi(g)
		if err != nil {
			continue
		}
		e, ok, err := f.GIDAt(dev, num, idx)
		if err != nil {
			return bad("gid "+g, err)
		}
		if !ok || e.GID.IsUnspecified() {
			continue // no value, or an empty slot
		}
		p.GIDs = append(p.GIDs, e)
	}
	return p, nil
}

// ParseGID parses the sysfs form of a GID, eight colon-separated groups of
// four hex digits ("fe80:0000:...:a610"); any IPv6 spelling is accepted.
func ParseGID(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || !a.Is6() || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("GID %q: not a 128-bit address", s)
	}
	return a, nil
}

// Counters reads ports/N/counters (the IB PMA counters; absent on rxe) and
// ports/N/hw_counters (driver counters such as rxe's sent_pkts), each as
// name → value. Missing directories give empty maps.
func (f FS) Counters(dev string, port int) (counters, hw map[string]uint64, err error) {
	base := fmt.Sprintf("/sys/class/infiniband/%s/ports/%d", dev, port)
	if !f.Exists(base) {
		return nil, nil, fmt.Errorf("rdma device %s has no port %d: %w", dev, port, fs.ErrNotExist)
	}
	read := func(dir string) (map[string]uint64, error) {
		m, err := readCounterDir(f.Path(base + "/" + dir))
		if errors.Is(err, fs.ErrNotExist) {
			return map[string]uint64{}, nil
		}
		return m, err
	}
	if counters, err = read("counters"); err != nil {
		return nil, nil, fmt.Errorf("%s port %d counters: %w", dev, port, err)
	}
	if hw, err = read("hw_counters"); err != nil {
		return nil, nil, fmt.Errorf("%s port %d hw_counters: %w", dev, port, err)
	}
	return counters, hw, nil
}

// UverbsDevices maps each RDMA device name to its uverbs character device
// name ("rxe0" → "uverbs0") from /sys/class/infiniband_verbs/*/ibdev. The map
// is empty when ib_uverbs is not loaded.
func (f FS) UverbsDevices() (map[string]string, error) {
	devs, err := f.VerbsDevices()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, d := range devs {
		m[d.IBDev] = d.Name
	}
	return m, nil
}
