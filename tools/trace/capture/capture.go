// Copyright 2026 The rdmago Authors.

// Package capture captures RoCEv2 frames (UDP port 4791) from a network
// interface with an AF_PACKET socket, a classic BPF filter and a
// memory-mapped TPACKET_V3 receive ring, the way tcpdump -i IFACE
// 'udp dst port 4791' does, without libpcap.
//
// It needs Linux and CAP_NET_RAW. A Handle owns one socket; Close it.
package capture

import (
	"errors"
	"time"
)

// DefaultSnapLen is the snapshot length used when Options.SnapLen is 0: enough
// for a full 9000-byte jumbo frame.
const DefaultSnapLen = 9216

// Packet is one captured frame.
type Packet struct {
	Time     time.Time
	Data     []byte // the first SnapLen bytes of the frame, Ethernet header first
	OrigLen  int    // the frame's length on the wire
	Outgoing bool   // sent by this host (PACKET_OUTGOING)
}

// ErrClosed is returned by ReadPacket after Close.
var ErrClosed = errors.New("capture: handle closed")
