// Copyright 2026 The rdmago Authors.

package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
)

// Helpers for the socket addresses the rdma_cm commands embed (SockaddrIn,
// SockaddrIn6, SockaddrIB and SockaddrStorage in rdma_user_cm.go): they build
// them from and read them as netip.AddrPort and the fields of sockaddr_ib.
// They perform no system call.

// putSockaddrIP writes ap as a sockaddr_in (IPv4) or sockaddr_in6 (IPv6,
// including IPv4-mapped) into b and returns its size. A zone must be a
// numeric interface index: abi cannot look names up.
func putSockaddrIP(b []byte, ap netip.AddrPort) (int, error) {
	a := ap.Addr()
	if !a.IsValid() {
		return 0, errors.New("socket address: invalid address (zero netip.AddrPort?)")
	}
	clear(b)
	if a.Is4() {
		binary.NativeEndian.PutUint16(b[0:], AF_INET)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		a4 := a.As4()
		copy(b[4:8], a4[:])
		return SizeofSockaddrIn, nil
	}
	var scope uint32
	if z := a.Zone(); z != "" {
		n, err := strconv.ParseUint(z, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("socket address %v: zone %q is not a numeric interface index; resolve it first (net.InterfaceByName)", ap, z)
		}
		scope = uint32(n)
	}
	binary.NativeEndian.PutUint16(b[0:], AF_INET6)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a16 := a.As16()
	copy(b[8:24], a16[:])
	binary.NativeEndian.PutUint32(b[24:], scope)
	return SizeofSockaddrIn6, nil
}

// sockaddrIPAddrPort reads a sockaddr_in or sockaddr_in6 from b.
func sockaddrIPAddrPort(b []byte) (netip.AddrPort, error) {
	switch fam := binary.NativeEndian.Uint16(b); fam {
	case AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:])), nil
	case AF_INET6:
		a := netip.AddrFrom16([16]byte(b[8:24]))
		if scope := binary.NativeEndian.Uint32(b[24:]); scope != 0 {
			a = a.WithZone(strconv.FormatUint(uint64(scope), 10))
		}
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[2:])), nil
	default:
		return netip.AddrPort{}, fmt.Errorf("socket address: family %d is not AF_INET (%d) or AF_INET6 (%d)", fam, AF_INET, AF_INET6)
	}
}

// sockaddrSize is the size of the address of family fam, 0 if unknown.
func sockaddrSize(fam uint16) int {
	switch fam {
	case AF_INET:
		return SizeofSockaddrIn
	case AF_INET6:
		return SizeofSockaddrIn6
	case AF_IB:
		return SizeofSockaddrIB
	}
	return 0
}

// SockaddrInFrom encodes an IPv4 address and port.
func SockaddrInFrom(ap netip.AddrPort) (SockaddrIn, error) {
	var s SockaddrIn
	if !ap.Addr().Is4() {
		return s, fmt.Errorf("sockaddr_in: %v is not an IPv4 address", ap)
	}
	_, err := putSockaddrIP(s[:], ap)
	return s, err
}

// AddrPort decodes s.
func (s *SockaddrIn) AddrPort() (netip.AddrPort, error) {
	if f := binary.NativeEndian.Uint16(s[:]); f != AF_INET {
		return netip.AddrPort{}, fmt.Errorf("sockaddr_in: family %d, want AF_INET (%d)", f, AF_INET)
	}
	return sockaddrIPAddrPort(s[:])
}

// SockaddrIn6From encodes ap for a sockaddr_in6 field: an IPv4 address as a
// sockaddr_in (which the kernel accepts there), anything else as a
// sockaddr_in6. Unmap an IPv4-mapped address first to get AF_INET.
func SockaddrIn6From(ap netip.AddrPort) (SockaddrIn6, error) {
	var s SockaddrIn6
	_, err := putSockaddrIP(s[:], ap)
	return s, err
}

// Family returns the address family in s.
func (s *SockaddrIn6) Family() uint16 { return binary.NativeEndian.Uint16(s[:]) }

// AddrPort decodes s, which holds a sockaddr_in or sockaddr_in6.
func (s *SockaddrIn6) AddrPort() (netip.AddrPort, error) { return sockaddrIPAddrPort(s[:]) }

// SockaddrStorageFrom encodes ap as a sockaddr_in or sockaddr_in6 and returns
// it with its size, the value for the size field that goes with it.
func SockaddrStorageFrom(ap netip.AddrPort) (SockaddrStorage, uint16, error) {
	var s SockaddrStorage
	n, err := putSockaddrIP(s[:], ap)
	return s, uint16(n), err
}

// Family returns the address family in s.
func (s *SockaddrStorage) Family() uint16 { return binary.NativeEndian.Uint16(s[:]) }

// Size returns the size of the address s holds, by its family (16 for
// AF_INET, 28 for AF_INET6, 48 for AF_IB), or 0 for another family.
func (s *SockaddrStorage) Size() uint16 { return uint16(sockaddrSize(s.Family())) }

// AddrPort decodes s as an AF_INET or AF_INET6 address.
func (s *SockaddrStorage) AddrPort() (netip.AddrPort, error) { return sockaddrIPAddrPort(s[:]) }

// SetIB stores an AF_IB address in s and returns its size.
func (s *SockaddrStorage) SetIB(ib SockaddrIB) uint16 {
	clear(s[:])
	copy(s[:], ib[:])
	return SizeofSockaddrIB
}

// IB returns the AF_IB address s holds.
func (s *SockaddrStorage) IB() (SockaddrIB, error) {
	var ib SockaddrIB
	if f := s.Family(); f != AF_IB {
		return ib, fmt.Errorf("sockaddr_storage: family %d, want AF_IB (%d)", f, AF_IB)
	}
	copy(ib[:], s[:])
	return ib, nil
}

// SockaddrIBFrom builds an AF_IB address. pkey, flowinfo, sid and sidMask are
// given in host order and stored in network order.
func SockaddrIBFrom(pkey uint16, flowinfo uint32, gid [16]byte, sid, sidMask, scopeID uint64) SockaddrIB {
	var s SockaddrIB
	binary.NativeEndian.PutUint16(s[0:], AF_IB)
	binary.BigEndian.PutUint16(s[2:], pkey)
	binary.BigEndian.PutUint32(s[4:], flowinfo)
	copy(s[8:24], gid[:])
	binary.BigEndian.PutUint64(s[24:], sid)
	binary.BigEndian.PutUint64(s[32:], sidMask)
	binary.NativeEndian.PutUint64(s[40:], scopeID)
	return s
}

// Family returns sib_family (AF_IB when valid).
func (s *SockaddrIB) Family() uint16 { return binary.NativeEndian.Uint16(s[0:]) }

// PKey returns sib_pkey in host order.
func (s *SockaddrIB) PKey() uint16 { return binary.BigEndian.Uint16(s[2:]) }

// FlowInfo returns sib_flowinfo in host order.
func (s *SockaddrIB) FlowInfo() uint32 { return binary.BigEndian.Uint32(s[4:]) }

// GID returns sib_addr, the port GID.
func (s *SockaddrIB) GID() [16]byte { return [16]byte(s[8:24]) }

// SID returns sib_sid, the service id, in host order.
func (s *SockaddrIB) SID() uint64 { return binary.BigEndian.Uint64(s[24:]) }

// SIDMask returns sib_sid_mask in host order.
func (s *SockaddrIB) SIDMask() uint64 { return binary.BigEndian.Uint64(s[32:]) }

// ScopeID returns sib_scope_id.
func (s *SockaddrIB) ScopeID() uint64 { return binary.NativeEndian.Uint64(s[40:]) }
