// Copyright 2026 The rdmago Authors.

package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The class directories of RDMA devices and of their uverbs character
// devices (drivers/infiniband/core/sysfs.c, uverbs_main.c).
const (
	ClassInfiniband = "/sys/class/infiniband"
	ClassVerbs      = "/sys/class/infiniband_verbs"
)

// VerbsDevice is one uverbs character device,
// /sys/class/infiniband_verbs/uverbsN.
type VerbsDevice struct {
	Name       string // "uverbs0", its node under /dev/infiniband
	IBDev      string // the RDMA device it serves (ibdev), "rxe0"
	ABIVersion int    // the driver's uverbs ABI version (abi_version); 0 when unreadable
	Dev        uint32 // its dev_t as the kernel encodes it, MAJOR<<20|MINOR; 0 when unreadable
}

// ReadVerbsClass reads the uverbs devices under dir, a directory laid out
// as /sys/class/infiniband_verbs (FS.VerbsDevices reads the system's one),
// sorted by name. Entries without an ibdev are left out; a missing dir (no
// ib_uverbs) gives no devices and no error.
func ReadVerbsClass(dir string) ([]VerbsDevice, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list uverbs devices: %w", err)
	}
	var out []VerbsDevice
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "uverbs") {
			continue
		}
		d := VerbsDevice{Name: e.Name(), IBDev: readTrim(filepath.Join(dir, e.Name(), "ibdev"))}
		if d.IBDev == "" {
			continue
		}
		d.ABIVersion, _ = strconv.Atoi(readTrim(filepath.Join(dir, e.Name(), "abi_version")))
		if maj, min, ok := strings.Cut(readTrim(filepath.Join(dir, e.Name(), "dev")), ":"); ok {
			ma, err1 := strconv.ParseUint(maj, 10, 12)
			mi, err2 := strconv.ParseUint(min, 10, 20)
			if err1 == nil && err2 == nil {
				d.Dev = uint32(ma<<20 | mi)
			}
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b VerbsDevice) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// VerbsDevices lists the uverbs character devices
// (/sys/class/infiniband_verbs), sorted by name; none when ib_uverbs is not
// loaded.
func (f FS) VerbsDevices() ([]VerbsDevice, error) { return ReadVerbsClass(f.Path(ClassVerbs)) }

// ABIVersion reads the abi_version attribute in the class or device
// directory dir (ClassVerbs for the uverbs command ABI,
// "/sys/class/misc/rdma_cm" for rdma_cm's). It fails with fs.ErrNotExist
// when there is none.
func (f FS) ABIVersion(dir string) (int, error) {
	s, err := f.ReadString(dir + "/abi_version")
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s/abi_version: %w", dir, err)
	}
	return v, nil
}

// DeviceAttr reads the attribute name of RDMA device dev
// (/sys/class/infiniband/DEV/NAME, such as "node_guid"), "" when it has none.
func (f FS) DeviceAttr(dev, name string) string {
	return f.readOpt(ClassInfiniband + "/" + dev + "/" + name)
}

// Parent is the netdev a Soft-RoCE device was made on (rxe's "parent"
// attribute), "" for devices of other drivers.
func (f FS) Parent(dev string) string { return f.DeviceAttr(dev, "parent") }

// Netdevs lists the network interfaces an RDMA device sits on: its parent
// (rxe), then the netdevs its GID entries were made from, each once.
func (f FS) Netdevs(dev string) []string {
	names := []string{f.Parent(dev)}
	ndevs, _ := filepath.Glob(filepath.Join(f.Path(ClassInfiniband), dev, "ports", "*", "gid_attrs", "ndevs", "*"))
	for _, p := range ndevs {
		names = append(names, readTrim(p))
	}
	return UniqueNames(names)
}

// UniqueNames is names without the empty and the repeated ones, in order
// (a device's netdevs, from sysfs or from RDMA netlink).
func UniqueNames(names []string) []string {
	var out []string
	for _, n := range names {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// GIDAt reads entry index of the GID table of dev's port (ports/N/gids/I,
// with gid_attrs/types/I and gid_attrs/ndevs/I). ok is false when sysfs
// gives no value for the entry; an empty slot is the unspecified address,
// without type or netdev.
func (f FS) GIDAt(dev string, port, index int) (g GID, ok bool, err error) {
	base := fmt.Sprintf("%s/%s/ports/%d", ClassInfiniband, dev, port)
	i := strconv.Itoa(index)
	s := f.readOpt(base + "/gids/" + i)
	if s == "" {
		return GID{}, false, nil
	}
	addr, err := ParseGID(s)
	if err != nil {
		return GID{}, false, err
	}
	g = GID{Index: index, GID: addr}
	if !addr.IsUnspecified() {
		g.Type = f.readOpt(base + "/gid_attrs/types/" + i)
		g.Netdev = f.readOpt(base + "/gid_attrs/ndevs/" + i)
	}
	return g, true, nil
}

// HWCounters are the hw_counters of one device port
// (/sys/class/infiniband/DEV/ports/N/hw_counters/*; rxe's are sent_pkts,
// rcvd_pkts, duplicate_request, out_of_seq_request, rcvd_seq_err,
// rcvd_rnr_err, retry_exceeded_err, ack_deferred, ...).
type HWCounters struct {
	Dev    string
	Port   int
	Values map[string]uint64
}

// ReadHWCounters reads the hw_counters of every port of the devices named
// in devs (all devices when devs is empty) under dir, a directory laid out
// as /sys/class/infiniband (FS.HWCounters reads the system's one), sorted by
// device and port. Ports without counters are left out; a device without
// ports is an error.
func ReadHWCounters(dir string, devs []string) ([]HWCounters, error) {
	if len(devs) == 0 {
		all, err := listDir(dir)
		if err != nil {
			return nil, fmt.Errorf("list RDMA devices: %w", err)
		}
		devs = all
	}
	var out []HWCounters
	for _, dev := range devs {
		ports, err := listDir(filepath.Join(dir, dev, "ports"))
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", dev, err)
		}
		for _, p := range ports {
			port, err := strconv.Atoi(p)
			if err != nil {
				continue
			}
			values, err := readCounterDir(filepath.Join(dir, dev, "ports", p, "hw_counters"))
			if err != nil {
				continue
			}
			out = append(out, HWCounters{Dev: dev, Port: port, Values: values})
		}
	}
	slices.SortFunc(out, func(a, b HWCounters) int {
		if a.Dev != b.Dev {
			return strings.Compare(a.Dev, b.Dev)
		}
		return a.Port - b.Port
	})
	return out, nil
}

// HWCounters reads the hw_counters of every port of the devices named in
// devs (all devices when devs is empty); see ReadHWCounters.
func (f FS) HWCounters(devs []string) ([]HWCounters, error) {
	return ReadHWCounters(f.Path(ClassInfiniband), devs)
}

// readCounterDir reads a directory of counters (ports/N/counters,
// ports/N/hw_counters) as name → value, leaving out what is not a readable
// number (a subdirectory such as counters_ext, the write-only lifespan).
func readCounterDir(dir string) (map[string]uint64, error) {
	names, err := listDir(dir)
	if err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			continue
		}
		v, err := parseUint(string(b), 64)
		if err != nil {
			continue
		}
		m[n] = v
	}
	return m, nil
}

// listDir returns the names in dir, unsorted.
func listDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

// readTrim returns the contents of file p without surrounding space, "" when
// it cannot be read.
func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
