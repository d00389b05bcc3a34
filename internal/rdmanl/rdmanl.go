// Copyright 2026 The rdmago Authors.

// Package rdmanl is a small client of the kernel's RDMA netlink device
// interface (NETLINK_RDMA, client RDMA_NL_NLDEV; drivers/infiniband/core/nldev.c):
// list devices and ports, add and delete links (Soft-RoCE: `rdma link add rxe0
// type rxe netdev eth0`) and look up character devices. It is what iproute2's
// `rdma` tool speaks, in pure Go.
//
// Requests are encoded and replies decoded by pure functions tested against
// golden bytes; Conn sends them (on Linux: elsewhere Dial fails).
package rdmanl

import (
	"fmt"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/netlink"
)

// Device is one RDMA device as RDMA_NLDEV_CMD_GET reports it
// (`rdma dev show`).
type Device struct {
	Index        uint32 // RDMA_NLDEV_ATTR_DEV_INDEX
	Name         string // RDMA_NLDEV_ATTR_DEV_NAME, e.g. "rxe0"
	Ports        uint32 // RDMA_NLDEV_ATTR_PORT_INDEX: the number of ports
	CapFlags     uint64 // RDMA_NLDEV_ATTR_CAP_FLAGS
	FWVersion    string // RDMA_NLDEV_ATTR_FW_VERSION
	NodeGUID     uint64 // RDMA_NLDEV_ATTR_NODE_GUID, host byte order of the wire u64
	SysImageGUID uint64 // RDMA_NLDEV_ATTR_SYS_IMAGE_GUID
	NodeType     uint8  // RDMA_NLDEV_ATTR_DEV_NODE_TYPE: RDMA_NODE_IB_CA, ...
	Protocol     string // RDMA_NLDEV_ATTR_DEV_PROTOCOL, e.g. "roce"
	DIM          bool   // RDMA_NLDEV_ATTR_DEV_DIM
}

// Port is one port of a device as RDMA_NLDEV_CMD_PORT_GET reports it
// (`rdma link show`).
type Port struct {
	DevIndex     uint32
	DevName      string
	Index        uint32 // RDMA_NLDEV_ATTR_PORT_INDEX, from 1
	CapFlags     uint64
	SubnetPrefix uint64
	LID          uint32
	SMLID        uint32
	LMC          uint8
	State        PortState // RDMA_NLDEV_ATTR_PORT_STATE
	PhysState    uint8     // RDMA_NLDEV_ATTR_PORT_PHYS_STATE: 5 is LINK_UP
	NetdevIndex  uint32    // RDMA_NLDEV_ATTR_NDEV_INDEX, 0 if none
	NetdevName   string    // RDMA_NLDEV_ATTR_NDEV_NAME, e.g. "eth0"
}

// PortState is enum ib_port_state.
type PortState uint8

// The values of enum ib_port_state (include/rdma/ib_verbs.h).
const (
	IB_PORT_NOP          PortState = 0
	IB_PORT_DOWN         PortState = 1
	IB_PORT_INIT         PortState = 2
	IB_PORT_ARMED        PortState = 3
	IB_PORT_ACTIVE       PortState = 4
	IB_PORT_ACTIVE_DEFER PortState = 5
)

func (s PortState) String() string {
	switch s {
	case IB_PORT_NOP:
		return "NOP"
	case IB_PORT_DOWN:
		return "DOWN"
	case IB_PORT_INIT:
		return "INIT"
	case IB_PORT_ARMED:
		return "ARMED"
	case IB_PORT_ACTIVE:
		return "ACTIVE"
	case IB_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER"
	}
	return fmt.Sprintf("PortState(%d)", uint8(s))
}

// Chardev is the answer to RDMA_NLDEV_CMD_GET_CHARDEV: which character device
// serves a client ("uverbs", "rdma_cm", "umad") of a device.
type Chardev struct {
	Name string // RDMA_NLDEV_ATTR_CHARDEV_NAME, e.g. "uverbs0"
	Dev  uint64 // RDMA_NLDEV_ATTR_CHARDEV: the dev_t, in the kernel's new_encode_dev form
	ABI  uint64 // RDMA_NLDEV_ATTR_CHARDEV_ABI
	// DriverID is RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID (enum rdma_driver_id,
	// abi.RDMA_DRIVER_RXE for Soft-RoCE): the driver the ioctl header must
	// name. Only "uverbs" answers carry it; 0 when absent.
	DriverID uint32
}

// Major and Minor split Dev (huge_encode_dev format, as the kernel sends it).
func (c Chardev) Major() uint32 { return uint32((c.Dev & 0xfff00) >> 8) }

// Minor is the minor number of Dev.
func (c Chardev) Minor() uint32 { return uint32((c.Dev & 0xff) | ((c.Dev >> 12) & 0xfff00)) }

// msgType is the nlmsg_type of an NLDEV command.
func msgType(cmd uint16) uint16 { return abi.RDMA_NL_GET_TYPE(abi.RDMA_NL_NLDEV, cmd) }

// newLinkReq is the RDMA_NLDEV_CMD_NEWLINK payload (`rdma link add NAME type
// TYPE netdev NETDEV`).
func newLinkReq(name, linkType, netdev string) []byte {
	var e netlink.Encoder
	e.String(abi.RDMA_NLDEV_ATTR_DEV_NAME, name)
	e.String(abi.RDMA_NLDEV_ATTR_LINK_TYPE, linkType)
	e.String(abi.RDMA_NLDEV_ATTR_NDEV_NAME, netdev)
	return e.Encode()
}

// devIndexReq is a payload holding only RDMA_NLDEV_ATTR_DEV_INDEX (DELLINK,
// PORT_GET dump of one device, GET of one device).
func devIndexReq(index uint32) []byte {
	var e netlink.Encoder
	e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, index)
	return e.Encode()
}

// chardevReq is the RDMA_NLDEV_CMD_GET_CHARDEV payload. devIndex < 0 asks for
// a device-less client such as "rdma_cm".
func chardevReq(devIndex int64, typ string) []byte {
	var e netlink.Encoder
	if devIndex >= 0 {
		e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, uint32(devIndex))
	}
	e.String(abi.RDMA_NLDEV_ATTR_CHARDEV_TYPE, typ)
	return e.Encode()
}

// parseDevice decodes one RDMA_NLDEV_CMD_GET reply.
func parseDevice(b []byte) (Device, error) {
	attrs, err := netlink.ParseAttrs(b)
	if err != nil {
		return Device{}, fmt.Errorf("rdma netlink: device: %w", err)
	}
	var d Device
	for _, a := range attrs {
		switch a.Type {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			d.Index = a.Uint32()
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			d.Name = a.String()
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			d.Ports = a.Uint32()
		case abi.RDMA_NLDEV_ATTR_CAP_FLAGS:
			d.CapFlags = a.Uint64()
		case abi.RDMA_NLDEV_ATTR_FW_VERSION:
			d.FWVersion = a.String()
		case abi.RDMA_NLDEV_ATTR_NODE_GUID:
			d.NodeGUID = a.Uint64()
		case abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID:
			d.SysImageGUID = a.Uint64()
		case abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE:
			d.NodeType = a.Uint8()
		case abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL:
			d.Protocol = a.String()
		case abi.RDMA_NLDEV_ATTR_DEV_DIM:
			d.DIM = a.Uint8() != 0
		}
	}
	if d.Name == "" {
		return Device{}, fmt.Errorf("rdma netlink: device reply without a name")
	}
	return d, nil
}

// parsePort decodes one RDMA_NLDEV_CMD_PORT_GET reply.
func parsePort(b []byte) (Port, error) {
	attrs, err := netlink.ParseAttrs(b)
	if err != nil {
		return Port{}, fmt.Errorf("rdma netlink: port: %w", err)
	}
	var p Port
	for _, a := range attrs {
		switch a.Type {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			p.DevIndex = a.Uint32()
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			p.DevName = a.String()
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			p.Index = a.Uint32()
		case abi.RDMA_NLDEV_ATTR_CAP_FLAGS:
			p.CapFlags = a.Uint64()
		case abi.RDMA_NLDEV_ATTR_SUBNET_PREFIX:
			p.SubnetPrefix = a.Uint64()
		case abi.RDMA_NLDEV_ATTR_LID:
			p.LID = a.Uint32()
		case abi.RDMA_NLDEV_ATTR_SM_LID:
			p.SMLID = a.Uint32()
		case abi.RDMA_NLDEV_ATTR_LMC:
			p.LMC = a.Uint8()
		case abi.RDMA_NLDEV_ATTR_PORT_STATE:
			p.State = PortState(a.Uint8())
		case abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE:
			p.PhysState = a.Uint8()
		case abi.RDMA_NLDEV_ATTR_NDEV_INDEX:
			p.NetdevIndex = a.Uint32()
		case abi.RDMA_NLDEV_ATTR_NDEV_NAME:
			p.NetdevName = a.String()
		}
	}
	if p.Index == 0 {
		return Port{}, fmt.Errorf("rdma netlink: port reply without a port index")
	}
	return p, nil
}

// parseChardev decodes the RDMA_NLDEV_CMD_GET_CHARDEV reply.
func parseChardev(b []byte) (Chardev, error) {
	attrs, err := netlink.ParseAttrs(b)
	if err != nil {
		return Chardev{}, fmt.Errorf("rdma netlink: chardev: %w", err)
	}
	var c Chardev
	for _, a := range attrs {
		switch a.Type {
		case abi.RDMA_NLDEV_ATTR_CHARDEV:
			c.Dev = a.Uint64()
		case abi.RDMA_NLDEV_ATTR_CHARDEV_ABI:
			c.ABI = a.Uint64()
		case abi.RDMA_NLDEV_ATTR_CHARDEV_NAME:
			c.Name = a.String()
		case abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID:
			c.DriverID = a.Uint32()
		}
	}
	if c.Name == "" {
		return Chardev{}, fmt.Errorf("rdma netlink: chardev reply without a name")
	}
	return c, nil
}
