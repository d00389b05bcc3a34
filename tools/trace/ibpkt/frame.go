// Copyright 2026 The rdmago Authors.

package ibpkt

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// EtherType values the frame decoder follows.
const (
	EtherTypeIPv4   = 0x0800
	EtherTypeIPv6   = 0x86dd
	EtherTypeVLAN   = 0x8100
	EtherTypeQinQ   = 0x88a8
	ipProtoUDP      = 17
	ethHeaderLen    = 14
	vlanTagLen      = 4
	ipv4MinHdrLen   = 20
	ipv6HeaderLen   = 40
	udpHeaderLen    = 8
	ipv4FlagMFAndFO = 0x3fff // more-fragments flag and fragment offset
)

// Frame is a decoded Ethernet frame carrying RoCEv2.
type Frame struct {
	VLAN             []uint16 // VLAN IDs, outermost first
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	TrafficClass     uint8 // IPv4 TOS or IPv6 traffic class (DSCP<<2 | ECN)
	Packet           *Packet
}

// Summary is "10.0.0.1:49152 > 10.0.0.2:4791 " followed by Packet.Summary.
func (f *Frame) Summary() string {
	s := fmt.Sprintf("%s > %s ", netip.AddrPortFrom(f.Src, f.SrcPort), netip.AddrPortFrom(f.Dst, f.DstPort))
	if ecn := f.TrafficClass & 3; ecn == 3 {
		s += "CE "
	}
	return s + f.Packet.Summary()
}

// DecodeFrame parses an Ethernet frame (LINKTYPE_ETHERNET) holding an IPv4 or
// IPv6 UDP datagram to port 4791, optionally behind VLAN tags, and decodes its
// RoCEv2 payload. Frames that are not RoCEv2 give an error saying why.
func DecodeFrame(b []byte) (*Frame, error) {
	if len(b) < ethHeaderLen {
		return nil, fmt.Errorf("decode ethernet: %d bytes: %w", len(b), ErrShort)
	}
	f := &Frame{}
	et := binary.BigEndian.Uint16(b[12:])
	off := ethHeaderLen
	for et == EtherTypeVLAN || et == EtherTypeQinQ {
		if len(b) < off+vlanTagLen {
			return nil, fmt.Errorf("decode VLAN tag: %w", ErrShort)
		}
		f.VLAN = append(f.VLAN, binary.BigEndian.Uint16(b[off:])&0xfff)
		et = binary.BigEndian.Uint16(b[off+2:])
		off += vlanTagLen
	}
	var udp []byte
	switch et {
	case EtherTypeIPv4:
		ip := b[off:]
		if len(ip) < ipv4MinHdrLen {
			return nil, fmt.Errorf("decode IPv4 header: %w", ErrShort)
		}
		if ip[0]>>4 != 4 {
			return nil, fmt.Errorf("decode IPv4 header: version %d", ip[0]>>4)
		}
		ihl := int(ip[0]&0xf) * 4
		total := int(binary.BigEndian.Uint16(ip[2:]))
		if ihl < ipv4MinHdrLen || total < ihl || len(ip) < total {
			return nil, fmt.Errorf("decode IPv4 header: ihl %d total length %d, %d bytes present: %w", ihl, total, len(ip), ErrShort)
		}
		if ip[9] != ipProtoUDP {
			return nil, fmt.Errorf("not RoCEv2: IPv4 protocol %d, not UDP", ip[9])
		}
		if binary.BigEndian.Uint16(ip[6:])&ipv4FlagMFAndFO != 0 {
			return nil, fmt.Errorf("not decoded: IPv4 fragment")
		}
		f.TrafficClass = ip[1]
		f.Src = netip.AddrFrom4([4]byte(ip[12:16]))
		f.Dst = netip.AddrFrom4([4]byte(ip[16:20]))
		udp = ip[ihl:total]
	case EtherTypeIPv6:
		ip := b[off:]
		if len(ip) < ipv6HeaderLen {
			return nil, fmt.Errorf("decode IPv6 header: %w", ErrShort)
		}
		if ip[6] != ipProtoUDP {
			return nil, fmt.Errorf("not RoCEv2: IPv6 next header %d, not UDP", ip[6])
		}
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		if len(ip) < ipv6HeaderLen+plen {
			return nil, fmt.Errorf("decode IPv6 payload: length %d, %d bytes present: %w", plen, len(ip)-ipv6HeaderLen, ErrShort)
		}
		f.TrafficClass = uint8(binary.BigEndian.Uint16(ip[0:]) >> 4)
		f.Src = netip.AddrFrom16([16]byte(ip[8:24]))
		f.Dst = netip.AddrFrom16([16]byte(ip[24:40]))
		udp = ip[ipv6HeaderLen : ipv6HeaderLen+plen]
	default:
		return nil, fmt.Errorf("not RoCEv2: ethertype %#04x", et)
	}
	if len(udp) < udpHeaderLen {
		return nil, fmt.Errorf("decode UDP header: %w", ErrShort)
	}
	f.SrcPort = binary.BigEndian.Uint16(udp[0:])
	f.DstPort = binary.BigEndian.Uint16(udp[2:])
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if f.DstPort != UDPPort {
		return nil, fmt.Errorf("not RoCEv2: UDP destination port %d, not %d", f.DstPort, UDPPort)
	}
	if ulen < udpHeaderLen || ulen > len(udp) {
		return nil, fmt.Errorf("decode UDP header: length %d, %d bytes present: %w", ulen, len(udp), ErrShort)
	}
	p, err := Decode(udp[udpHeaderLen:ulen])
	if err != nil {
		return nil, err
	}
	f.Packet = p
	return f, nil
}
