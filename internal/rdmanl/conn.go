// Copyright 2026 The rdmago Authors.

package rdmanl

import (
	"fmt"
	"syscall"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/netlink"
)

// Conn is an RDMA netlink socket. Listing needs no privileges; adding and
// deleting links needs CAP_NET_ADMIN. The caller must Close it.
type Conn struct {
	c *netlink.Conn
}

// Dial opens a NETLINK_RDMA socket. It fails with EPROTONOSUPPORT on a kernel
// without RDMA (CONFIG_INFINIBAND unset or ib_core not loaded).
func Dial() (*Conn, error) {
	c, err := netlink.Dial(netlink.NETLINK_RDMA)
	if err != nil {
		return nil, fmt.Errorf("rdma netlink (is ib_core loaded?): %w", err)
	}
	return &Conn{c: c}, nil
}

// Close closes the socket; it is idempotent.
func (c *Conn) Close() error { return c.c.Close() }

// Devices lists every RDMA device (`rdma dev show`).
func (c *Conn) Devices() ([]Device, error) {
	msgs, err := c.c.Execute(msgType(abi.RDMA_NLDEV_CMD_GET), netlink.NLM_F_DUMP, nil)
	if err != nil {
		return nil, fmt.Errorf("list rdma devices: %w", err)
	}
	devs := make([]Device, 0, len(msgs))
	for _, m := range msgs {
		d, err := parseDevice(m.Data)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// DeviceByName returns the device called name.
func (c *Conn) DeviceByName(name string) (Device, error) {
	devs, err := c.Devices()
	if err != nil {
		return Device{}, err
	}
	for _, d := range devs {
		if d.Name == name {
			return d, nil
		}
	}
	return Device{}, fmt.Errorf("rdma device %q: %w", name, syscall.ENODEV)
}

// Ports lists the ports of the device with index dev (`rdma link show DEV`).
func (c *Conn) Ports(dev uint32) ([]Port, error) {
	msgs, err := c.c.Execute(msgType(abi.RDMA_NLDEV_CMD_PORT_GET), netlink.NLM_F_DUMP, devIndexReq(dev))
	if err != nil {
		return nil, fmt.Errorf("list ports of rdma device %d: %w", dev, err)
	}
	ports := make([]Port, 0, len(msgs))
	for _, m := range msgs {
		p, err := parsePort(m.Data)
		if err != nil {
			return nil, err
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// AddLink creates a software RDMA device (`rdma link add NAME type TYPE netdev
// NETDEV`); linkType is "rxe" (Soft-RoCE, module rdma_rxe) or "siw". The
// device stays until DelLink or the netdev goes away.
func (c *Conn) AddLink(name, linkType, netdev string) error {
	if name == "" || linkType == "" || netdev == "" {
		return fmt.Errorf("add rdma link: name, type and netdev must all be set (got %q, %q, %q)", name, linkType, netdev)
	}
	// No NLM_F_CREATE|NLM_F_EXCL: rdma_nl_rcv_msg takes any NLM_F_DUMP bit
	// (NLM_F_EXCL shares its value with NLM_F_MATCH) as a dump request.
	if _, err := c.c.Execute(msgType(abi.RDMA_NLDEV_CMD_NEWLINK), 0, newLinkReq(name, linkType, netdev)); err != nil {
		return fmt.Errorf("add rdma link %s type %s netdev %s: %w", name, linkType, netdev, err)
	}
	return nil
}

// DelLink deletes the software RDMA device with index dev (`rdma link delete`).
func (c *Conn) DelLink(dev uint32) error {
	if _, err := c.c.Execute(msgType(abi.RDMA_NLDEV_CMD_DELLINK), 0, devIndexReq(dev)); err != nil {
		return fmt.Errorf("delete rdma link %d: %w", dev, err)
	}
	return nil
}

// Chardev asks which character device serves client typ ("uverbs", "umad")
// of device dev, or of no device when dev < 0 ("rdma_cm").
func (c *Conn) Chardev(dev int64, typ string) (Chardev, error) {
	msgs, err := c.c.Execute(msgType(abi.RDMA_NLDEV_CMD_GET_CHARDEV), 0, chardevReq(dev, typ))
	if err != nil {
		return Chardev{}, fmt.Errorf("get %s chardev: %w", typ, err)
	}
	for _, m := range msgs {
		return parseChardev(m.Data)
	}
	return Chardev{}, fmt.Errorf("get %s chardev: no answer from the kernel", typ)
}
