// Copyright 2026 The rdmago Authors.

package capture

import (
	"golang.org/x/sys/unix"
)

// RoCEv2 filter program constants.
const (
	rocev2Port   = 4791
	etherTypeOff = 12
	ipv4ProtoOff = 14 + 9
	ipv4FragOff  = 14 + 6
	ipv4Start    = 14
	ipv6NextOff  = 14 + 6
	ipv6UDPDport = 14 + 40 + 2
	udpDportOff  = 14 + 2 // added to X = IPv4 header length
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// RoCEv2Filter returns the classic BPF socket filter (SO_ATTACH_FILTER) that
// accepts Ethernet frames carrying UDP to destination port 4791 over IPv4
// (first fragments and unfragmented datagrams) or IPv6 (UDP as the first next
// header), keeping at most snapLen bytes of each, and drops everything else.
// It is the equivalent of tcpdump's "udp dst port 4791" for untagged frames
// (the kernel strips offloaded VLAN tags before packet sockets see them).
func RoCEv2Filter(snapLen uint32) []unix.SockFilter {
	const (
		ldh    = unix.BPF_LD | unix.BPF_H | unix.BPF_ABS
		ldb    = unix.BPF_LD | unix.BPF_B | unix.BPF_ABS
		ldhInd = unix.BPF_LD | unix.BPF_H | unix.BPF_IND
		ldxMSH = unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset   = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
	)
	// Jump offsets count instructions after the jump; accept is 14, drop 15.
	return []unix.SockFilter{
		/* 0 */ stmt(ldh, etherTypeOff),
		/* 1 */ jump(jeq, unix.ETH_P_IP, 0, 7), // IPv4: 2, else 9
		/* 2 */ stmt(ldb, ipv4ProtoOff),
		/* 3 */ jump(jeq, unix.IPPROTO_UDP, 0, 11), // else drop
		/* 4 */ stmt(ldh, ipv4FragOff),
		/* 5 */ jump(jset, 0x1fff, 9, 0), // a non-first fragment has no UDP header: drop
		/* 6 */ stmt(ldxMSH, ipv4Start), // X = 4*(IHL)
		/* 7 */ stmt(ldhInd, udpDportOff),
		/* 8 */ jump(jeq, rocev2Port, 5, 6), // accept, drop
		/* 9 */ jump(jeq, unix.ETH_P_IPV6, 0, 5), // else drop
		/* 10 */ stmt(ldb, ipv6NextOff),
		/* 11 */ jump(jeq, unix.IPPROTO_UDP, 0, 3),
		/* 12 */ stmt(ldh, ipv6UDPDport),
		/* 13 */ jump(jeq, rocev2Port, 0, 1),
		/* 14 */ stmt(ret, snapLen),
		/* 15 */ stmt(ret, 0),
	}
}
