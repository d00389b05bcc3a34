// Copyright 2026 The rdmago Authors.

// Package devinfo is the logic of the rdmainfo command: it gathers what the
// kernel says about RDMA devices (sysfs, RDMA netlink, and — where a device
// can be opened — the uverbs QUERY_DEVICE/QUERY_PORT answers), decodes it the
// way ibv_devinfo, ibv_devices, show_gids and iproute2's rdma tool print it,
// and diagnoses the usual reasons RDMA does not work on a host.
//
// Everything reads through a System whose parts can be replaced: a file-system
// root (sysfs.FS) and small interfaces for netlink, interface addresses,
// credentials, rlimits and opening device nodes. Host tests run the same code
// on fixture trees captured in the lab.
package devinfo

import (
	"net/netip"

	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/internal/sysfs"
)

// System is everything rdmainfo looks at.
type System struct {
	FS sysfs.FS

	// NL answers RDMA netlink queries; nil when the socket could not be
	// opened (NLErr says why), in which case what netlink alone knows is
	// left out and diagnose reports it.
	NL    Netlink
	NLErr error

	// Verbs queries device and port attributes through uverbs; nil when
	// unavailable (ibv_devinfo fields that only QUERY_DEVICE knows are then
	// left out).
	Verbs Verbs

	Addrs   Addrs // IP addresses of network interfaces
	Creds   Creds // who is asking
	Memlock func() (cur, max uint64, err error)
	Open    func(path string) error // open a device node read-write and close it again

	closer interface{ Close() error } // what Close releases (Live only)
}

// Close releases the netlink socket of a Live System; it is idempotent.
func (s *System) Close() error {
	if s.closer == nil {
		return nil
	}
	err := s.closer.Close()
	s.closer, s.NL = nil, nil
	return err
}

// Netlink is the part of *rdmanl.Conn rdmainfo uses.
type Netlink interface {
	Devices() ([]rdmanl.Device, error)
	Ports(dev uint32) ([]rdmanl.Port, error)
	AddLink(name, linkType, netdev string) error
	DelLink(dev uint32) error
	ResSummary() ([]rdmanl.ResSummary, error)
	QPs(dev uint32) ([]rdmanl.QP, error)
	CQs(dev uint32) ([]rdmanl.CQ, error)
	MRs(dev uint32) ([]rdmanl.MR, error)
	PDs(dev uint32) ([]rdmanl.PD, error)
	CMIDs(dev uint32) ([]rdmanl.CMID, error)
	SRQs(dev uint32) ([]rdmanl.SRQ, error)
}

// Addrs returns the IP addresses assigned to a network interface.
type Addrs interface {
	Addrs(ifname string) ([]netip.Prefix, error)
}

// StaticAddrs is an Addrs from a table (for tests and fixtures).
type StaticAddrs map[string][]netip.Prefix

// Addrs returns the table's entry for ifname.
func (s StaticAddrs) Addrs(ifname string) ([]netip.Prefix, error) { return s[ifname], nil }

// Creds are the credentials the device-node checks are made for.
type Creds struct {
	UID       uint32
	GIDs      []uint32 // primary and supplementary groups
	CapIPCLck bool     // CAP_IPC_LOCK is effective: pinned memory is not limited by RLIMIT_MEMLOCK
}

// UnlimitedMemlock is the value Memlock reports for RLIM_INFINITY.
const UnlimitedMemlock = ^uint64(0)

// devices is the sysfs view of device name, or of every device when name is
// empty.
func (s *System) devices(name string) ([]sysfs.Device, error) {
	if name == "" {
		return s.FS.Devices()
	}
	d, err := s.FS.Device(name)
	if err != nil {
		return nil, err
	}
	return []sysfs.Device{d}, nil
}
