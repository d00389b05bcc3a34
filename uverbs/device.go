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

// DeviceQuery selects a device for LookupDevice. Every field that is set
// must match; the zero DeviceQuery matches every device.
type DeviceQuery struct {
	Name     string     // the RDMA device ("rxe0") or its uverbs node ("uverbs0")
	Netdev   string     // a network interface the device sits on (for Soft-RoCE, the netdev given to `rdma link add`)
	IP       netip.Addr // an address of the interface the device sits on
	NodeGUID uint64     // host order, as DeviceAttr.NodeGUID and rdma_cm give it
	// Index is the kernel's device index, which RDMA netlink
	// (RDMA_NLDEV_ATTR_DEV_INDEX, Linux 4.16+) and rdma_cm report; 0 means
	// any index, DeviceIndexZero the index 0.
	Index int
}

// DeviceIndexZero is the DeviceQuery.Index that asks for the kernel's
// device index 0 (a zero Index matches any device).
const DeviceIndexZero = -1

func (q DeviceQuery) String() string {
	var s []string
	if q.Name != "" {
		s = append(s, fmt.Sprintf("name %q", q.Name))
	}
	if q.Netdev != "" {
		s = append(s, fmt.Sprintf("netdev %q", q.Netdev))
	}
	if q.IP.IsValid() {
		s = append(s, fmt.Sprintf("address %v", q.IP))
	}
	if q.NodeGUID != 0 {
		s = append(s, "node GUID "+sysfs.GUID(q.NodeGUID).String())
	}
	if q.Index != 0 {
		s = append(s, fmt.Sprintf("index %d", max(q.Index, 0)))
	}
	if len(s) == 0 {
		return "any device"
	}
	return strings.Join(s, ", ")
}

// LookupDevice returns the RDMA device that matches q (Devices filtered by
// q's fields). With more than one match it fails, naming them, unless q
// names the device; with none it fails with ErrNoDevice and the devices
// there are.
func LookupDevice(q DeviceQuery) (Device, error) {
	all, err := Devices()
	if err != nil {
		return Device{}, err
	}
	devs := all
	if q.Name != "" {
		devs = filterDevices(devs, func(d Device) bool { return d.Name == q.Name || d.Uverbs == q.Name })
	}
	if q.NodeGUID != 0 {
		devs = filterDevices(devs, func(d Device) bool {
			g, err := sysfs.ParseGUID(d.NodeGUID)
			return err == nil && uint64(g) == q.NodeGUID
		})
	}
	if q.Index != 0 && len(devs) > 0 {
		name, err := deviceNameByIndex(max(q.Index, 0))
		if err != nil {
			return Device{}, fmt.Errorf("device with %v: %w", q, err)
		}
		devs = filterDevices(devs, func(d Device) bool { return d.Name == name })
	}
	netdev := q.Netdev
	if q.IP.IsValid() && len(devs) > 0 {
		ifname, err := interfaceWithAddr(q.IP)
		if err != nil {
			return Device{}, fmt.Errorf("device with %v: %w: %s", q, err, noDeviceHint)
		}
		if netdev != "" && netdev != ifname {
			devs = nil
		}
		netdev = ifname
	}
	if netdev != "" && len(devs) > 0 {
		on := filterDevices(devs, func(d Device) bool { return slices.Contains(d.Netdevs, netdev) })
		if len(on) == 0 {
			// Not a port's own netdev: one whose addresses became GID
			// entries (a VLAN or macvlan on top of it), which only the
			// GID table names.
			on = filterDevices(devs, func(d Device) bool { return slices.Contains(sysRoot.Netdevs(d.Name), netdev) })
		}
		devs = on
	}
	switch {
	case len(all) == 0:
		return Device{}, fmt.Errorf("%w: %s", ErrNoDevice, noDeviceHint)
	case len(devs) == 0:
		return Device{}, fmt.Errorf("no RDMA device with %v (have %s): %w: %s", q, deviceNames(all), ErrNoDevice, noDeviceHint)
	case len(devs) > 1 && q.Name == "":
		return Device{}, fmt.Errorf("%d RDMA devices match %v (%s): name one", len(devs), q, deviceNames(devs))
	}
	return devs[0], nil
}

func filterDevices(devs []Device, keep func(Device) bool) []Device {
	var out []Device
	for _, d := range devs {
		if keep(d) {
			out = append(out, d)
		}
	}
	return out
}

// interfaceWithAddr names the network interface that holds addr.
func interfaceWithAddr(addr netip.Addr) (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("list interfaces: %w", err)
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(p.IP); ok && ip.Unmap() == addr.Unmap() {
					return ifc.Name, nil
				}
			}
		}
	}
	return "", fmt.Errorf("no interface has address %v: %w", addr, ErrNoDevice)
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

// deviceNameByIndex names the device with the kernel's index idx over RDMA
// netlink (Linux 4.16+).
func deviceNameByIndex(idx int) (string, error) {
	nl, err := rdmanl.Dial()
	if err != nil {
		return "", err
	}
	defer nl.Close()
	devs, err := nl.Devices()
	if err != nil {
		return "", err
	}
	for _, d := range devs {
		if int64(d.Index) == int64(idx) {
			return d.Name, nil
		}
	}
	return "", fmt.Errorf("no RDMA device with index %d: %w", idx, ErrNoDevice)
}

// deviceNames lists devs' names for an error message ("rxe0, rxe1").
func deviceNames(devs []Device) string {
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}
