// Copyright 2026 The rdmago Authors.

package uverbs_test

import (
	"fmt"
	"net/netip"

	"github.com/rdmago/rdmago/uverbs"
)

// MTUFromBytes maps a byte count to the IB MTU that QP.Connect takes; 1500,
// an Ethernet MTU, is no IB MTU.
func ExampleMTUFromBytes() {
	mtu := uverbs.MTUFromBytes(1024)
	fmt.Println(mtu, mtu == uverbs.MTU1024, uverbs.MTUFromBytes(1500))
	// Output: 1024 true MTU(0)
}

// On RoCE v2 a port's GID for an IPv4 address is the IPv4-mapped address.
func ExampleGIDFromAddr() {
	gid := uverbs.GIDFromAddr(netip.MustParseAddr("192.0.2.7"))
	fmt.Println(gid)
	fmt.Printf("% x\n", gid[:])
	// Output:
	// ::ffff:192.0.2.7
	// 00 00 00 00 00 00 00 00 00 00 ff ff c0 00 02 07
}

// A RemoteBuffer (MR.Descriptor) travels to the peer as 16 bytes, which the
// peer decodes into the RemoteAddr and RKey of its RDMA WRITE or READ.
func ExampleRemoteBuffer() {
	desc := uverbs.RemoteBuffer{Addr: 0x7f0000001000, RKey: 0x1234, Len: 4096}
	wire, _ := desc.MarshalBinary()
	fmt.Printf("% x\n", wire)

	var peer uverbs.RemoteBuffer
	if err := peer.UnmarshalBinary(wire); err != nil {
		panic(err)
	}
	wr := uverbs.SendWR{Opcode: uverbs.WRRDMAWrite, RemoteAddr: peer.Addr, RKey: peer.RKey}
	fmt.Printf("write to %#x rkey %#x, up to %d bytes\n", wr.RemoteAddr, wr.RKey, peer.Len)
	// Output:
	// 00 00 7f 00 00 00 10 00 00 00 12 34 00 00 10 00
	// write to 0x7f0000001000 rkey 0x1234, up to 4096 bytes
}
