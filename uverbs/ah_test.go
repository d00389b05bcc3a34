// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"encoding/binary"
	"net"
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

// TestLoopbackMAC: an address of the source GID's own netdev gets that
// netdev's MAC (rxe 5.10 loops such packets back); any other address,
// and a netdev without a MAC, get zero.
func TestLoopbackMAC(t *testing.T) {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Skip(err)
	}
	checked := false
	for _, ifi := range ifs {
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, _ := netip.AddrFromSlice(n.IP)
			got := loopbackMAC(ifi.Index, GIDFromAddr(ip.Unmap()))
			if len(ifi.HardwareAddr) == 6 {
				checked = true
				if got != [6]byte(ifi.HardwareAddr) {
					t.Errorf("%s %v: %x, want its MAC %v", ifi.Name, ip, got, ifi.HardwareAddr)
				}
			} else if got != ([6]byte{}) {
				t.Errorf("%s (no MAC) %v: %x, want zero", ifi.Name, ip, got)
			}
		}
		if got := loopbackMAC(ifi.Index, GIDFromAddr(netip.MustParseAddr("192.0.2.77"))); got != ([6]byte{}) {
			t.Errorf("%s: a foreign address got %x, want zero", ifi.Name, got)
		}
	}
	if !checked {
		t.Log("no interface with a MAC and an address here: only the zero cases were checked")
	}
}
