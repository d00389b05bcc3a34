// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/internal/sys"
	"github.com/rdmago/rdmago/internal/sysfs"
)

// sysRoot is where devices are read from: sysfs and /dev of the running
// system. A variable so tests can root it at a fake tree.
var sysRoot = sysfs.New("/")

// Device is one RDMA device with a uverbs character device, as listed in
// sysfs (ibv_get_device_list).
type Device struct {
	Name       string // the RDMA device, e.g. "rxe0"
	Uverbs     string // its uverbs node, e.g. "uverbs0"
	Path       string // e.g. "/dev/infiniband/uverbs0"
	ABIVersion int    // the driver's uverbs ABI version (sysfs uverbsN/abi_version)
	NodeGUID   string // as sysfs prints it, e.g. "5054:00ff:fe12:3456"
	// Netdevs are the network interfaces the device sits on: its parent
	// (rxe's) and each port's netdev, as RDMA netlink reports them; without
	// netlink, every netdev its GID entries were made from (sysfs).
	Netdevs []string
	// DriverID is enum rdma_driver_id (RDMA_DRIVER_RXE, ...), learnt over
	// RDMA netlink; 0 when the kernel did not say.
	DriverID uint32
}

// Devices lists the uverbs devices (ibv_get_device_list). It returns an empty
// list, not an error, on a Linux machine without RDMA, and an error matching
// ErrNotSupported on other systems.
func Devices() ([]Device, error) {
	if err := sys.Supported(); err != nil {
		return nil, fmt.Errorf("list uverbs devices: %w", err)
	}
	vs, err := sysRoot.VerbsDevices()
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	nl := netlinkInfo()
	var devs []Device
	for _, v := range vs {
		n := nl[v.IBDev]
		d := Device{
			Name:       v.IBDev,
			Uverbs:     v.Name,
			Path:       sysRoot.Path("/dev/infiniband/" + v.Name),
			ABIVersion: v.ABIVersion,
			NodeGUID:   sysRoot.DeviceAttr(v.IBDev, "node_guid"),
			DriverID:   n.driverID,
		}
		if n.ports {
			d.Netdevs = sysfs.UniqueNames(append([]string{sysRoot.Parent(v.IBDev)}, n.netdevs...))
		} else {
			// Every GID entry's netdev: rxe has 1,024 entries, so this
			// costs 0.15-0.4 s under the lab's emulation.
			d.Netdevs = sysRoot.Netdevs(v.IBDev)
		}
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Name < devs[j].Name })
	return devs, nil
}

// DeviceByName returns the device called name ("rxe0"), or the first device
// when name is "".
func DeviceByName(name string) (Device, error) {
	devs, err := Devices()
	if err != nil {
		return Device{}, err
	}
	for _, d := range devs {
		if name == "" || d.Name == name || d.Uverbs == name {
			return d, nil
		}
	}
	if name == "" || len(devs) == 0 {
		return Device{}, fmt.Errorf("%w: %s", ErrNoDevice, noDeviceHint)
	}
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Name
	}
	return Device{}, fmt.Errorf("device %q not found (have %s): %w: %s", name, strings.Join(names, ", "), ErrNoDevice, noDeviceHint)
}

// DeviceByNetdev returns the RDMA device bound to the network interface
// ifname (for Soft-RoCE, the netdev given to `rdma link add`).
func DeviceByNetdev(ifname string) (Device, error) {
	devs, err := Devices()
	if err != nil {
		return Device{}, err
	}
	for _, d := range devs {
		if slices.Contains(d.Netdevs, ifname) {
			return d, nil
		}
	}
	// Not a port's own netdev: one whose addresses became GID entries (a
	// VLAN or macvlan on top of it), which only the GID table names.
	for _, d := range devs {
		if slices.Contains(sysRoot.Netdevs(d.Name), ifname) {
			return d, nil
		}
	}
	return Device{}, fmt.Errorf("no RDMA device on netdev %q: %w: %s", ifname, ErrNoDevice, noDeviceHint)
}

// DeviceByIP returns the RDMA device bound to the interface that holds addr.
func DeviceByIP(addr netip.Addr) (Device, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return Device{}, fmt.Errorf("list interfaces: %w", err)
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(p.IP); ok && ip.Unmap() == addr.Unmap() {
					return DeviceByNetdev(ifc.Name)
				}
			}
		}
	}
	return Device{}, fmt.Errorf("no interface has address %v: %w: %s", addr, ErrNoDevice, noDeviceHint)
}

// nlDevice is what RDMA netlink says of a device: the driver serving its
// uverbs (RDMA_NLDEV_CMD_GET_CHARDEV, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID; the
// ioctl interface refuses commands whose header names another driver) and
// its ports' netdevs (RDMA_NLDEV_CMD_PORT_GET, RDMA_NLDEV_ATTR_NDEV_NAME),
// ports telling whether that list was read.
type nlDevice struct {
	driverID uint32
	netdevs  []string
	ports    bool
}

// netlinkInfo asks RDMA netlink about every device, by name. Errors leave
// the map (or a device's entry) empty; callers fall back to sysfs. A
// variable so tests can stand in for the kernel.
var netlinkInfo = func() map[string]nlDevice {
	out := map[string]nlDevice{}
	c, err := rdmanl.Dial()
	if err != nil {
		return out
	}
	defer c.Close()
	devs, err := c.Devices()
	if err != nil {
		return out
	}
	for _, d := range devs {
		var n nlDevice
		if cd, err := c.Chardev(int64(d.Index), "uverbs"); err == nil {
			n.driverID = cd.DriverID
		}
		if ports, err := c.Ports(d.Index); err == nil {
			n.ports = true
			for _, p := range ports {
				n.netdevs = append(n.netdevs, p.NetdevName)
			}
		}
		out[d.Name] = n
	}
	return out
}

// DeviceByIndex returns the device with the kernel's index idx — the index
// RDMA netlink (RDMA_NLDEV_ATTR_DEV_INDEX) and rdma_cm (ib_dev_index) report.
// It needs RDMA netlink (Linux 4.16+).
func DeviceByIndex(idx uint32) (Device, error) {
	nl, err := rdmanl.Dial()
	if err != nil {
		return Device{}, fmt.Errorf("device with index %d: %w", idx, err)
	}
	defer nl.Close()
	devs, err := nl.Devices()
	if err != nil {
		return Device{}, fmt.Errorf("device with index %d: %w", idx, err)
	}
	for _, d := range devs {
		if d.Index == idx {
			return DeviceByName(d.Name)
		}
	}
	return Device{}, fmt.Errorf("no RDMA device with index %d: %w", idx, ErrNoDevice)
}

// DeviceByNodeGUID returns the device whose node GUID is guid (host order,
// as DeviceAttr.NodeGUID and rdma_cm's node_guid after byte swapping give it).
func DeviceByNodeGUID(guid uint64) (Device, error) {
	devs, err := Devices()
	if err != nil {
		return Device{}, err
	}
	var names []string
	for _, d := range devs {
		names = append(names, d.Name)
		if g, err := sysfs.ParseGUID(d.NodeGUID); err == nil && uint64(g) == guid {
			return d, nil
		}
	}
	return Device{}, fmt.Errorf("no RDMA device with node GUID %s (have %s): %w", sysfs.GUID(guid), strings.Join(names, ", "), ErrNoDevice)
}
