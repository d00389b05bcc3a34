// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
)

// TestRxeAV: the address vector a UD send carries on a kernel whose rxe
// returns no AH number (5.10) holds both IP addresses as rdma_gid2ip
// makes them, and the network type of the source GID.
func TestRxeAV(t *testing.T) {
	v4 := GIDFromAddr(netip.MustParseAddr("10.77.0.1"))
	peer := GIDFromAddr(netip.MustParseAddr("10.77.0.2"))
	av := rxeAV(AHAttr{Port: 1, IsGlobal: true, GRH: GlobalRoute{DGID: peer, SGIDIndex: 1, HopLimit: 64}}, v4)
	if av.PortNum != 1 || av.NetworkType != abi.RXE_NETWORK_TYPE_IPV4 || av.GRH.DGID != peer || av.GRH.HopLimit != 64 || av.GRH.SGIDIndex != 1 {
		t.Errorf("av %+v", av)
	}
	if fam := binary.NativeEndian.Uint16(av.SGIDAddr[:]); fam != 2 || netip.AddrFrom4([4]byte(av.SGIDAddr[4:8])).String() != "10.77.0.1" {
		t.Errorf("sgid_addr % x, want sockaddr_in of 10.77.0.1", av.SGIDAddr)
	}
	if netip.AddrFrom4([4]byte(av.DGIDAddr[4:8])).String() != "10.77.0.2" {
		t.Errorf("dgid_addr % x, want sockaddr_in of 10.77.0.2", av.DGIDAddr)
	}
	v6 := GIDFromAddr(netip.MustParseAddr("fe80::1"))
	av = rxeAV(AHAttr{Port: 1, GRH: GlobalRoute{DGID: v6}}, v6)
	if av.NetworkType != abi.RXE_NETWORK_TYPE_IPV6 || binary.NativeEndian.Uint16(av.DGIDAddr[:]) != 10 || [16]byte(av.DGIDAddr[8:24]) != v6 {
		t.Errorf("IPv6 av %+v", av)
	}
}
