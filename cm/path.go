// Copyright 2026 The rdmago Authors.

package cm

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/uverbs"
)

// PathRecord is an InfiniBand path record (struct sa_path_rec in the
// kernel, struct ibv_sa_path_rec in libibverbs): the route an ID's traffic
// takes. On RoCE the CM builds it from the neighbour and GID tables, so the
// GIDs, PKey, MTU and rate are what matter; SLID and DLID are 0.
type PathRecord struct {
	ServiceID      uint64     // the service ID the path was resolved for (0 when unknown)
	DGID, SGID     uverbs.GID // destination and source port GIDs
	DLID, SLID     uint16     // destination and source LIDs (InfiniBand)
	FlowLabel      uint32     // 20 bits
	HopLimit       uint8      //
	TrafficClass   uint8      //
	Reversible     bool       // the path may be used in both directions
	NumbPath       uint8      // the number of paths the query asked for
	PKey           uint16     // the partition key
	SL             uint8      // the service level (4 bits)
	MTU            uverbs.MTU // the path MTU (enum ibv_mtu)
	Rate           uint8      // the static rate (enum ibv_rate / IB_RATE_*)
	PacketLifeTime uint8      // 4.096 µs × 2^PacketLifeTime
	Preference     uint8      //
	// Flags are the IB_PATH_* flags QueryPath reports with each record:
	// PathPrimary, PathAlternate, PathOutbound, PathInbound,
	// PathInboundReverse (0 for QueryRoute's records).
	Flags uint32
}

// Path record flags (IB_PATH_* in include/uapi/rdma/ib_user_sa.h) of
// PathRecord.Flags.
const (
	PathGMP            = 0x1  // IB_PATH_GMP: the path is for GMPs (management datagrams)
	PathPrimary        = 0x2  // IB_PATH_PRIMARY
	PathAlternate      = 0x4  // IB_PATH_ALTERNATE
	PathOutbound       = 0x8  // IB_PATH_OUTBOUND
	PathInbound        = 0x10 // IB_PATH_INBOUND
	PathInboundReverse = 0x20 // IB_PATH_INBOUND_REVERSE
)

// pathFromWire decodes struct ib_path_rec_data: IB_PATH_* flags and the
// 64-byte IBTA SA PathRecord attribute (big-endian, as on the wire), which
// the struct holds as 16 native-endian words.
func pathFromWire(d *abi.IBPathRecData) PathRecord {
	var b [64]byte
	for i, w := range d.PathRec {
		binary.NativeEndian.PutUint32(b[4*i:], w)
	}
	return pathFromIBA(b, d.Flags)
}

// pathFromIBA decodes the IBTA PathRecord attribute (IBA 15.2.5.16).
func pathFromIBA(b [64]byte, flags uint32) PathRecord {
	be := binary.BigEndian
	w := be.Uint32(b[44:])
	return PathRecord{
		ServiceID:      be.Uint64(b[0:]),
		DGID:           uverbs.GID(b[8:24]),
		SGID:           uverbs.GID(b[24:40]),
		DLID:           be.Uint16(b[40:]),
		SLID:           be.Uint16(b[42:]),
		FlowLabel:      w >> 8 & 0xfffff,
		HopLimit:       uint8(w),
		TrafficClass:   b[48],
		Reversible:     b[49]&0x80 != 0,
		NumbPath:       b[49] & 0x7f,
		PKey:           be.Uint16(b[50:]),
		SL:             b[53] & 0xf,
		MTU:            uverbs.MTU(b[54] & 0x3f),
		Rate:           b[55] & 0x3f,
		PacketLifeTime: b[56] & 0x3f,
		Preference:     b[57],
		Flags:          flags,
	}
}

// pathFromUser converts struct ib_user_path_rec (QUERY_ROUTE).
func pathFromUser(p *abi.IBUserPathRec) PathRecord {
	be := binary.BigEndian
	return PathRecord{
		DGID: uverbs.GID(p.DGID), SGID: uverbs.GID(p.SGID),
		DLID: be.Uint16(p.DLID[:]), SLID: be.Uint16(p.SLID[:]),
		FlowLabel: be.Uint32(p.FlowLabel[:]), HopLimit: p.HopLimit, TrafficClass: p.TrafficClass,
		Reversible: p.Reversible != 0, NumbPath: p.NumbPath, PKey: be.Uint16(p.PKey[:]), SL: p.SL,
		MTU: uverbs.MTU(p.MTU), Rate: p.Rate, PacketLifeTime: p.PacketLifeTime, Preference: p.Preference,
	}
}

func (p PathRecord) String() string {
	return fmt.Sprintf("path %v -> %v pkey %#x mtu %v rate %d sl %d", p.SGID, p.DGID, p.PKey, p.MTU, p.Rate, p.SL)
}

// IBAddr is struct sockaddr_ib (AF_IB): a port GID and a service ID, as the
// CM's QUERY reports an ID's source and destination.
type IBAddr struct {
	PKey          uint16
	FlowInfo      uint32
	GID           uverbs.GID
	ServiceID     uint64 // the port space in bits 16-31 and the port in bits 0-15 for IP-based IDs
	ServiceIDMask uint64
	ScopeID       uint64
}

func ibAddrFrom(s *abi.SockaddrIB) IBAddr {
	return IBAddr{PKey: s.PKey(), FlowInfo: s.FlowInfo(), GID: uverbs.GID(s.GID()), ServiceID: s.SID(), ServiceIDMask: s.SIDMask(), ScopeID: s.ScopeID()}
}

// ECE is struct ibv_ece (rdma_get_remote_ece): the Enhanced Connection
// Establishment options a peer's CM message carried (Linux 5.9+; zero when
// the peer sent none).
type ECE struct {
	VendorID uint32 // IEEE OUI
	AttrMod  uint32 // the vendor's options
}
