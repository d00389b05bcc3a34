// Copyright 2026 The rdmago Authors.

// Package rtnl is a minimal rtnetlink (NETLINK_ROUTE) client: look up a link by
// name, set it up or down, create or delete a link (veth pairs), add an IPv4
// address, and put a netem qdisc (delay, loss, reordering) at a link's root.
// It is what the lab's guest init and lab tests use instead of iproute2's ip
// and tc (rtnetlink(7), tc-netem(8)).
//
// The request encoders are pure functions tested against golden bytes; Conn
// sends them (on Linux: elsewhere Dial fails).
package rtnl

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/rdmago/rdmago/internal/netlink"
)

// rtnetlink message types and attributes (include/uapi/linux/rtnetlink.h,
// if_link.h, if_addr.h, veth.h).
const (
	RTM_NEWLINK = 16
	RTM_DELLINK = 17
	RTM_GETLINK = 18
	RTM_NEWADDR = 20

	IFLA_ADDRESS   = 1
	IFLA_IFNAME    = 3
	IFLA_MTU       = 4
	IFLA_LINKINFO  = 18
	IFLA_INFO_KIND = 1
	IFLA_INFO_DATA = 2
	VETH_INFO_PEER = 1

	IFA_ADDRESS   = 1
	IFA_LOCAL     = 2
	IFA_BROADCAST = 4

	IFF_UP            = 0x1
	IFF_LOWER_UP      = 0x10000
	AF_UNSPEC         = 0
	AF_INET           = 2
	ifinfomsgLen      = 16
	ifaddrmsgLen      = 8
	RT_SCOPE_UNIVERSE = 0
)

// Link is what rtnetlink reports about a network interface.
type Link struct {
	Index        int32
	Name         string
	Flags        uint32 // IFF_*
	MTU          uint32
	HardwareAddr []byte
}

// Up reports whether the link is administratively up.
func (l Link) Up() bool { return l.Flags&IFF_UP != 0 }

// ifinfomsg encodes struct ifinfomsg.
func ifinfomsg(family uint8, typ uint16, index int32, flags, change uint32) []byte {
	b := make([]byte, ifinfomsgLen)
	b[0] = family
	binary.NativeEndian.PutUint16(b[2:], typ)
	binary.NativeEndian.PutUint32(b[4:], uint32(index))
	binary.NativeEndian.PutUint32(b[8:], flags)
	binary.NativeEndian.PutUint32(b[12:], change)
	return b
}

// getLinkReq is the RTM_GETLINK payload that looks a link up by name.
func getLinkReq(name string) []byte {
	var e netlink.Encoder
	e.String(IFLA_IFNAME, name)
	return append(ifinfomsg(AF_UNSPEC, 0, 0, 0, 0), e.Encode()...)
}

// setUpReq is the RTM_NEWLINK payload that sets link index up (or down).
func setUpReq(index int32, up bool) []byte {
	var flags uint32
	if up {
		flags = IFF_UP
	}
	return ifinfomsg(AF_UNSPEC, 0, index, flags, IFF_UP)
}

// delLinkReq is the RTM_DELLINK payload that deletes link index (`ip link
// del NAME`: the header alone, no attributes).
func delLinkReq(index int32) []byte {
	return ifinfomsg(AF_UNSPEC, 0, index, 0, 0)
}

// addVethReq is the RTM_NEWLINK payload that creates a veth pair name/peer
// (iproute2's `ip link add NAME type veth peer name PEER`).
func addVethReq(name, peer string) []byte {
	var e netlink.Encoder
	e.String(IFLA_IFNAME, name)
	e.Nested(IFLA_LINKINFO, func(li *netlink.Encoder) {
		li.Bytes(IFLA_INFO_KIND, []byte("veth")) // unterminated, as iproute2 sends it
		li.Nested(IFLA_INFO_DATA, func(d *netlink.Encoder) {
			var p netlink.Encoder
			p.String(IFLA_IFNAME, peer)
			// VETH_INFO_PEER carries a struct ifinfomsg followed by the
			// peer's own IFLA_* attributes.
			d.Bytes(VETH_INFO_PEER, append(ifinfomsg(AF_UNSPEC, 0, 0, 0, 0), p.Encode()...))
		})
	})
	return append(ifinfomsg(AF_UNSPEC, 0, 0, 0, 0), e.Encode()...)
}

// addAddrReq is the RTM_NEWADDR payload that adds IPv4 prefix p to link index
// (`ip addr add P dev X`, with the broadcast address set like `brd +`).
func addAddrReq(index int32, p netip.Prefix) ([]byte, error) {
	if !p.Addr().Is4() {
		return nil, fmt.Errorf("address %v: only IPv4 is supported", p)
	}
	if p.Bits() < 0 || p.Bits() > 32 {
		return nil, fmt.Errorf("address %v: bad prefix length", p)
	}
	h := make([]byte, ifaddrmsgLen)
	h[0] = AF_INET
	h[1] = uint8(p.Bits())
	h[2] = 0 // flags
	h[3] = RT_SCOPE_UNIVERSE
	binary.NativeEndian.PutUint32(h[4:], uint32(index))
	a := p.Addr().As4()
	var e netlink.Encoder
	e.Bytes(IFA_LOCAL, a[:])
	e.Bytes(IFA_ADDRESS, a[:])
	if p.Bits() < 31 {
		v := binary.BigEndian.Uint32(a[:]) | (uint32(1)<<(32-p.Bits()) - 1)
		brd := binary.BigEndian.AppendUint32(nil, v)
		e.Bytes(IFA_BROADCAST, brd)
	}
	return append(h, e.Encode()...), nil
}

// parseLink decodes an RTM_NEWLINK message (the answer to RTM_GETLINK).
func parseLink(b []byte) (Link, error) {
	if len(b) < ifinfomsgLen {
		return Link{}, fmt.Errorf("rtnl: short ifinfomsg (%d bytes)", len(b))
	}
	l := Link{
		Index: int32(binary.NativeEndian.Uint32(b[4:])),
		Flags: binary.NativeEndian.Uint32(b[8:]),
	}
	attrs, err := netlink.ParseAttrs(b[ifinfomsgLen:])
	if err != nil {
		return Link{}, fmt.Errorf("rtnl: link attributes: %w", err)
	}
	for _, a := range attrs {
		switch a.Type {
		case IFLA_IFNAME:
			l.Name = a.String()
		case IFLA_MTU:
			l.MTU = a.Uint32()
		case IFLA_ADDRESS:
			l.HardwareAddr = append([]byte(nil), a.Data...)
		}
	}
	return l, nil
}
