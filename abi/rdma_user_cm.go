// Copyright 2026 The rdmago Authors.

package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"structs"
)

// This file is include/uapi/rdma/rdma_user_cm.h, ABI version 4: the write()
// command ABI of /dev/infiniband/rdma_cm (the kernel's ucma). It was ported by
// hand from rdma-core v44 (kernel-headers/rdma/rdma_user_cm.h, as Debian 12
// installs it; the ABI of Linux 6.1 and 6.12), plus the additions up to
// rdma-core's kernel-headers at commit 691953d (2026-08), which are marked
// "newer than Linux 6.12": IB service resolution (RESOLVE_IB_SERVICE,
// RDMA_USER_CM_QUERY_IB_SERVICE) and user events (WRITE_CM_EVENT). Older
// kernels reject those commands with EINVAL and that query with ENOSYS.
//
// It also holds the parts of include/uapi/rdma/ib_user_sa.h that ucma uses
// (ib_user_path_rec, ib_path_rec_data, ib_user_service_rec), the socket
// address types the commands embed (as fixed byte arrays), the CM event codes
// (enum rdma_cm_event_type, include/rdma/rdma_cm.h and librdmacm's
// rdma_cma.h), and the private-data limits of the IB CM (include/rdma/ib_cm.h).
//
// A command is one write(2) of an rdma_ucm_cmd_hdr followed by the command
// struct; EncodeUCMCommand builds that buffer. Commands with a response carry
// the response buffer's address in their Response field: the kernel writes
// the response there (up to the header's Out bytes), not into the write
// buffer. Setting that address is the caller's job (package cm), because abi
// holds no pointers and makes no syscalls.

// RDMA_USER_CM_ABI_VERSION is the ABI version this file ports; the kernel
// reports its own in /sys/class/misc/rdma_cm/abi_version.
const RDMA_USER_CM_ABI_VERSION = 4

// RDMA_MAX_PRIVATE_DATA is the size of the private_data arrays in the
// command structs. The length fields are __u8, so at most 255 bytes are
// carried, and the CM allows less (see MaxPrivateDataTCPConnect and friends).
const RDMA_MAX_PRIVATE_DATA = 256

// rdma_ucm commands (anonymous enum): the Cmd of an rdma_ucm_cmd_hdr.
const (
	RDMA_USER_CM_CMD_CREATE_ID     = 0
	RDMA_USER_CM_CMD_DESTROY_ID    = 1
	RDMA_USER_CM_CMD_BIND_IP       = 2
	RDMA_USER_CM_CMD_RESOLVE_IP    = 3
	RDMA_USER_CM_CMD_RESOLVE_ROUTE = 4
	RDMA_USER_CM_CMD_QUERY_ROUTE   = 5
	RDMA_USER_CM_CMD_CONNECT       = 6
	RDMA_USER_CM_CMD_LISTEN        = 7
	RDMA_USER_CM_CMD_ACCEPT        = 8
	RDMA_USER_CM_CMD_REJECT        = 9
	RDMA_USER_CM_CMD_DISCONNECT    = 10
	RDMA_USER_CM_CMD_INIT_QP_ATTR  = 11
	RDMA_USER_CM_CMD_GET_EVENT     = 12
	RDMA_USER_CM_CMD_GET_OPTION    = 13 // the kernel answers ENOSYS
	RDMA_USER_CM_CMD_SET_OPTION    = 14
	RDMA_USER_CM_CMD_NOTIFY        = 15
	RDMA_USER_CM_CMD_JOIN_IP_MCAST = 16
	RDMA_USER_CM_CMD_LEAVE_MCAST   = 17
	RDMA_USER_CM_CMD_MIGRATE_ID    = 18
	RDMA_USER_CM_CMD_QUERY         = 19
	RDMA_USER_CM_CMD_BIND          = 20
	RDMA_USER_CM_CMD_RESOLVE_ADDR  = 21
	RDMA_USER_CM_CMD_JOIN_MCAST    = 22

	RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE = 23 // newer than Linux 6.12
	RDMA_USER_CM_CMD_WRITE_CM_EVENT     = 24 // newer than Linux 6.12
)

var ucmCmdNames = [...]string{
	"CREATE_ID", "DESTROY_ID", "BIND_IP", "RESOLVE_IP", "RESOLVE_ROUTE",
	"QUERY_ROUTE", "CONNECT", "LISTEN", "ACCEPT", "REJECT", "DISCONNECT",
	"INIT_QP_ATTR", "GET_EVENT", "GET_OPTION", "SET_OPTION", "NOTIFY",
	"JOIN_IP_MCAST", "LEAVE_MCAST", "MIGRATE_ID", "QUERY", "BIND",
	"RESOLVE_ADDR", "JOIN_MCAST", "RESOLVE_IB_SERVICE", "WRITE_CM_EVENT",
}

// UCMCmdString names an rdma_ucm command number: "RDMA_USER_CM_CMD_CONNECT",
// or "RDMA_USER_CM_CMD(99)" for a number this file does not know.
func UCMCmdString(cmd uint32) string {
	if cmd < uint32(len(ucmCmdNames)) {
		return "RDMA_USER_CM_CMD_" + ucmCmdNames[cmd]
	}
	return "RDMA_USER_CM_CMD(" + strconv.FormatUint(uint64(cmd), 10) + ")"
}

// enum rdma_ucm_port_space: the PS of UCMCreateID (IBTA Annex A11, service
// ID bytes 4 and 5).
const (
	RDMA_PS_IPOIB = 0x0002
	RDMA_PS_IB    = 0x013F
	RDMA_PS_TCP   = 0x0106 // reliable connected; the usual choice
	RDMA_PS_UDP   = 0x0111 // unreliable datagram
)

// Options of UCMQuery (anonymous enum).
const (
	RDMA_USER_CM_QUERY_ADDR = 0 // response UCMQueryAddrResp
	RDMA_USER_CM_QUERY_PATH = 1 // response UCMQueryPathResp + IBPathRecData[num_paths]
	RDMA_USER_CM_QUERY_GID  = 2 // response UCMQueryAddrResp (addresses as sockaddr_ib)

	// Response UCMQueryIBServiceResp + IBUserServiceRec[num_service_recs];
	// newer than Linux 6.12.
	RDMA_USER_CM_QUERY_IB_SERVICE = 3
)

// Flags of UCMIBService: which of its fields to resolve by (newer than Linux 6.12).
const (
	RDMA_USER_CM_IB_SERVICE_FLAG_ID   = 1 << 0
	RDMA_USER_CM_IB_SERVICE_FLAG_NAME = 1 << 1
)

// RDMA_USER_CM_IB_SERVICE_NAME_SIZE is the size of UCMIBService.ServiceName.
const RDMA_USER_CM_IB_SERVICE_NAME_SIZE = 64

// Multicast join flags: the JoinFlags of UCMJoinMcast (anonymous enum).
const (
	RDMA_MC_JOIN_FLAG_FULLMEMBER          = 0
	RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER = 1
	RDMA_MC_JOIN_FLAG_RESERVED            = 2
)

// Option levels: the Level of UCMSetOption.
const (
	RDMA_OPTION_ID = 0
	RDMA_OPTION_IB = 1
)

// Option names at level RDMA_OPTION_ID, with the value the kernel expects
// behind OptVal (OptLen must be exactly its size).
const (
	RDMA_OPTION_ID_TOS         = 0 // __u8, RFC 2474 type of service
	RDMA_OPTION_ID_REUSEADDR   = 1 // int (4 bytes), like SO_REUSEADDR
	RDMA_OPTION_ID_AFONLY      = 2 // int (4 bytes), like IPV6_V6ONLY
	RDMA_OPTION_ID_ACK_TIMEOUT = 3 // __u8, the QP's local ACK timeout exponent
)

// Option names at level RDMA_OPTION_IB.
const (
	RDMA_OPTION_IB_PATH = 1 // an array of IBPathRecData
)

// Path record flags: the Flags of IBPathRecData (include/uapi/rdma/ib_user_sa.h).
const (
	IB_PATH_GMP             = 1
	IB_PATH_PRIMARY         = 1 << 1
	IB_PATH_ALTERNATE       = 1 << 2
	IB_PATH_OUTBOUND        = 1 << 3
	IB_PATH_INBOUND         = 1 << 4
	IB_PATH_INBOUND_REVERSE = 1 << 5
	IB_PATH_BIDIRECTIONAL   = IB_PATH_OUTBOUND | IB_PATH_INBOUND_REVERSE
)

// Reject reasons the kernel accepts in UCMReject.Reason (enum ib_cm_rej_reason,
// include/rdma/ib_cm.h). Zero means IB_CM_REJ_CONSUMER_DEFINED.
const (
	IB_CM_REJ_CONSUMER_DEFINED            = 28
	IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35
)

// Private data sizes of the IB CM messages (enum ib_cm_data_size,
// include/rdma/ib_cm.h; IB_CM_REQ_PRIVATE_DATA_SIZE is now in
// include/rdma/ibta_vol1_c12.h). These bound the private data of IB and
// RoCE (rxe) connections; iWARP uses MPA and other limits.
const (
	IB_CM_REQ_PRIVATE_DATA_SIZE      = 92
	IB_CM_MRA_PRIVATE_DATA_SIZE      = 222
	IB_CM_REJ_PRIVATE_DATA_SIZE      = 148
	IB_CM_REP_PRIVATE_DATA_SIZE      = 196
	IB_CM_RTU_PRIVATE_DATA_SIZE      = 224
	IB_CM_DREQ_PRIVATE_DATA_SIZE     = 220
	IB_CM_DREP_PRIVATE_DATA_SIZE     = 224
	IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE = 216
	IB_CM_SIDR_REP_PRIVATE_DATA_SIZE = 136
)

// CMAHdrSize is sizeof(struct cma_hdr) (drivers/infiniband/core/cma.c): the
// header the kernel's rdma_cm puts in front of the application's private data
// in REQ and SIDR_REQ messages of AF_INET/AF_INET6 ids (cma_user_data_offset;
// AF_IB ids carry none).
const CMAHdrSize = 36

// The most private data an application can send, per port space and step,
// for AF_INET/AF_INET6 ids on IB and RoCE. The kernel rejects more with
// EINVAL. A peer may receive more bytes than were sent (zero padding up to
// the message's size).
const (
	MaxPrivateDataTCPConnect = IB_CM_REQ_PRIVATE_DATA_SIZE - CMAHdrSize      // 56: RDMA_PS_TCP connect (REQ)
	MaxPrivateDataTCPAccept  = IB_CM_REP_PRIVATE_DATA_SIZE                   // 196: RDMA_PS_TCP accept (REP)
	MaxPrivateDataReject     = IB_CM_REJ_PRIVATE_DATA_SIZE                   // 148: reject (REJ)
	MaxPrivateDataUDPConnect = IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE - CMAHdrSize // 180: RDMA_PS_UDP resolve (SIDR REQ)
	MaxPrivateDataUDPAccept  = IB_CM_SIDR_REP_PRIVATE_DATA_SIZE              // 136: RDMA_PS_UDP accept (SIDR REP)
	MaxPrivateDataIBConnect  = IB_CM_REQ_PRIVATE_DATA_SIZE                   // 92: AF_IB ids connect (REQ)
)

// CMEventType is enum rdma_cm_event_type (include/rdma/rdma_cm.h in the
// kernel, rdma/rdma_cma.h in librdmacm): the Event of a UCMEventResp.
type CMEventType uint32

// enum rdma_cm_event_type.
const (
	RDMA_CM_EVENT_ADDR_RESOLVED    CMEventType = 0
	RDMA_CM_EVENT_ADDR_ERROR       CMEventType = 1
	RDMA_CM_EVENT_ROUTE_RESOLVED   CMEventType = 2
	RDMA_CM_EVENT_ROUTE_ERROR      CMEventType = 3
	RDMA_CM_EVENT_CONNECT_REQUEST  CMEventType = 4
	RDMA_CM_EVENT_CONNECT_RESPONSE CMEventType = 5
	RDMA_CM_EVENT_CONNECT_ERROR    CMEventType = 6
	RDMA_CM_EVENT_UNREACHABLE      CMEventType = 7
	RDMA_CM_EVENT_REJECTED         CMEventType = 8
	RDMA_CM_EVENT_ESTABLISHED      CMEventType = 9
	RDMA_CM_EVENT_DISCONNECTED     CMEventType = 10
	RDMA_CM_EVENT_DEVICE_REMOVAL   CMEventType = 11
	RDMA_CM_EVENT_MULTICAST_JOIN   CMEventType = 12
	RDMA_CM_EVENT_MULTICAST_ERROR  CMEventType = 13
	RDMA_CM_EVENT_ADDR_CHANGE      CMEventType = 14
	RDMA_CM_EVENT_TIMEWAIT_EXIT    CMEventType = 15

	// Newer than Linux 6.12.
	RDMA_CM_EVENT_ADDRINFO_RESOLVED CMEventType = 16 // RESOLVE_IB_SERVICE done
	RDMA_CM_EVENT_ADDRINFO_ERROR    CMEventType = 17 // RESOLVE_IB_SERVICE failed
	RDMA_CM_EVENT_USER              CMEventType = 18 // written by WRITE_CM_EVENT; UCMEventResp.Arg
	RDMA_CM_EVENT_INTERNAL          CMEventType = 19 // kernel-internal, never delivered
)

var cmEventNames = [...]string{
	"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR",
	"CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE",
	"REJECTED", "ESTABLISHED", "DISCONNECTED", "DEVICE_REMOVAL",
	"MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT",
	"ADDRINFO_RESOLVED", "ADDRINFO_ERROR", "USER", "INTERNAL",
}

// String returns the C name ("RDMA_CM_EVENT_ESTABLISHED"), or
// "RDMA_CM_EVENT(25)" for a code newer than this port.
func (e CMEventType) String() string {
	if e < CMEventType(len(cmEventNames)) {
		return "RDMA_CM_EVENT_" + cmEventNames[e]
	}
	return "RDMA_CM_EVENT(" + strconv.FormatUint(uint64(e), 10) + ")"
}

// Address families of the socket addresses embedded in the commands
// (include/linux/socket.h).
const (
	AF_INET  = 2
	AF_INET6 = 10
	AF_IB    = 27
)

// Sizes of the socket address types, the values of the size fields
// (AddrSize, SrcSize, DstSize) that go with them.
const (
	SizeofSockaddrIn      = 16
	SizeofSockaddrIn6     = 28
	SizeofSockaddrIB      = 48
	SizeofSockaddrStorage = 128
)

// SockaddrIn is struct sockaddr_in (include/uapi/linux/in.h) as bytes: family
// (native order), port (network order), IPv4 address, 8 zero bytes.
type SockaddrIn [SizeofSockaddrIn]byte

// SockaddrIn6 is struct sockaddr_in6 (include/uapi/linux/in6.h) as bytes:
// family (native order), port and flow info (network order), IPv6 address,
// scope id (native order). The commands that embed it (bind_ip, resolve_ip,
// join_ip_mcast, query_route) also accept a sockaddr_in in it; the family
// says which.
type SockaddrIn6 [SizeofSockaddrIn6]byte

// SockaddrIB is struct sockaddr_ib (include/rdma/ib.h, librdmacm's
// infiniband/ib.h) as bytes: family AF_IB and pkey, flow info, GID, service
// id, service id mask (network order), scope id (native order).
type SockaddrIB [SizeofSockaddrIB]byte

// SockaddrStorage is struct __kernel_sockaddr_storage
// (include/uapi/linux/socket.h) as bytes: room for a SockaddrIn, SockaddrIn6
// or SockaddrIB. In C it is 8-byte aligned; every command places it at an
// 8-byte offset, which the layout tests check.
type SockaddrStorage [SizeofSockaddrStorage]byte

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

// IBUserPathRec is struct ib_user_path_rec (include/uapi/rdma/ib_user_sa.h):
// a path record as QUERY_ROUTE returns it. The [N]byte fields are __be16 and
// __be32 in C (network order).
type IBUserPathRec struct {
	_                      structs.HostLayout
	DGID                   [16]byte
	SGID                   [16]byte
	DLID                   [2]byte // __be16
	SLID                   [2]byte // __be16
	RawTraffic             uint32
	FlowLabel              [4]byte // __be32
	Reversible             uint32
	MTU                    uint32
	PKey                   [2]byte // __be16
	HopLimit               uint8
	TrafficClass           uint8
	NumbPath               uint8
	SL                     uint8
	MTUSelector            uint8
	RateSelector           uint8
	Rate                   uint8
	PacketLifeTimeSelector uint8
	PacketLifeTime         uint8
	Preference             uint8
}

// IBPathRecData is struct ib_path_rec_data (include/uapi/rdma/ib_user_sa.h):
// a path record in IBTA wire format (PathRec, big-endian as on the wire) and
// IB_PATH_* flags. QUERY with RDMA_USER_CM_QUERY_PATH returns them, and
// RDMA_OPTION_IB_PATH sets them.
type IBPathRecData struct {
	_        structs.HostLayout
	Flags    uint32
	Reserved uint32
	PathRec  [16]uint32
}

// IBUserServiceRec is struct ib_user_service_rec
// (include/uapi/rdma/ib_user_sa.h): an IB service record as QUERY with
// RDMA_USER_CM_QUERY_IB_SERVICE returns it (newer than Linux 6.12). The
// [N]byte fields are big-endian (__be16/32/64 and arrays of them) in C.
type IBUserServiceRec struct {
	_        structs.HostLayout
	ID       [8]byte // __be64
	GID      [16]uint8
	PKey     [2]byte // __be16
	Reserved [2]uint8
	Lease    [4]byte // __be32
	Key      [16]uint8
	Name     [64]uint8
	Data8    [16]uint8
	Data16   [16]byte // __be16[8]
	Data32   [16]byte // __be32[4]
	Data64   [16]byte // __be64[2]
}

// UCMCmdHdr is struct rdma_ucm_cmd_hdr (include/uapi/rdma/rdma_user_cm.h):
// the start of every write() to /dev/infiniband/rdma_cm. In and Out are in
// bytes: the size of the command struct that follows, and of the response
// buffer the command's Response field points to.
type UCMCmdHdr struct {
	_   structs.HostLayout
	Cmd uint32
	In  uint16
	Out uint16
}

// UCMCreateID is struct rdma_ucm_create_id (include/uapi/rdma/rdma_user_cm.h),
// the body of RDMA_USER_CM_CMD_CREATE_ID (rdma_create_id). UID is the
// caller's cookie, returned in every event of the id. PS is an RDMA_PS_*
// port space, QPType the ib_qp_type (IB_QPT_RC = 2, IB_QPT_UD = 4).
// Response → UCMCreateIDResp.
type UCMCreateID struct {
	_        structs.HostLayout
	UID      uint64
	Response uint64
	PS       uint16
	QPType   uint8
	Reserved [5]uint8
}

// UCMCreateIDResp is struct rdma_ucm_create_id_resp
// (include/uapi/rdma/rdma_user_cm.h): the kernel's id of the new rdma_cm id.
type UCMCreateIDResp struct {
	_  structs.HostLayout
	ID uint32
}

// UCMDestroyID is struct rdma_ucm_destroy_id (include/uapi/rdma/rdma_user_cm.h),
// the body of RDMA_USER_CM_CMD_DESTROY_ID (rdma_destroy_id) and of
// RDMA_USER_CM_CMD_LEAVE_MCAST (where ID is the multicast id).
// Response → UCMDestroyIDResp.
type UCMDestroyID struct {
	_        structs.HostLayout
	Response uint64
	ID       uint32
	Reserved uint32
}

// UCMDestroyIDResp is struct rdma_ucm_destroy_id_resp
// (include/uapi/rdma/rdma_user_cm.h): how many events the kernel reported for
// the id, so the caller can wait until it has consumed them all.
type UCMDestroyIDResp struct {
	_              structs.HostLayout
	EventsReported uint32
}

// UCMBindIP is struct rdma_ucm_bind_ip (include/uapi/rdma/rdma_user_cm.h),
// the body of RDMA_USER_CM_CMD_BIND_IP (the old bind; UCMBind supersedes it).
// Response is unused.
type UCMBindIP struct {
	_        structs.HostLayout
	Response uint64
	Addr     SockaddrIn6
	ID       uint32
}

// UCMBind is struct rdma_ucm_bind (include/uapi/rdma/rdma_user_cm.h), the body
// of RDMA_USER_CM_CMD_BIND (rdma_bind_addr). AddrSize must be the size of the
// address in Addr (SockaddrStorage.Size).
type UCMBind struct {
	_        structs.HostLayout
	ID       uint32
	AddrSize uint16
	Reserved uint16
	Addr     SockaddrStorage
}

// UCMResolveIP is struct rdma_ucm_resolve_ip (include/uapi/rdma/rdma_user_cm.h),
// the body of RDMA_USER_CM_CMD_RESOLVE_IP (the old resolve_addr).
type UCMResolveIP struct {
	_         structs.HostLayout
	SrcAddr   SockaddrIn6
	DstAddr   SockaddrIn6
	ID        uint32
	TimeoutMS uint32
}

// UCMResolveAddr is struct rdma_ucm_resolve_addr
// (include/uapi/rdma/rdma_user_cm.h), the body of RDMA_USER_CM_CMD_RESOLVE_ADDR
// (rdma_resolve_addr). SrcSize is 0 for no source address; DstSize must be
// the size of DstAddr's address. Completion is an ADDR_RESOLVED or ADDR_ERROR
// event.
type UCMResolveAddr struct {
	_         structs.HostLayout
	ID        uint32
	TimeoutMS uint32
	SrcSize   uint16
	DstSize   uint16
	Reserved  uint32
	SrcAddr   SockaddrStorage
	DstAddr   SockaddrStorage
}

// UCMResolveRoute is struct rdma_ucm_resolve_route
// (include/uapi/rdma/rdma_user_cm.h), the body of
// RDMA_USER_CM_CMD_RESOLVE_ROUTE (rdma_resolve_route). Completion is a
// ROUTE_RESOLVED or ROUTE_ERROR event.
type UCMResolveRoute struct {
	_         structs.HostLayout
	ID        uint32
	TimeoutMS uint32
}

// UCMQuery is struct rdma_ucm_query (include/uapi/rdma/rdma_user_cm.h), the
// body of RDMA_USER_CM_CMD_QUERY_ROUTE (Option unused, response
// UCMQueryRouteResp) and RDMA_USER_CM_CMD_QUERY (Option an
// RDMA_USER_CM_QUERY_*, response UCMQueryAddrResp or UCMQueryPathResp).
type UCMQuery struct {
	_        structs.HostLayout
	Response uint64
	ID       uint32
	Option   uint32
}

// UCMQueryRouteResp is struct rdma_ucm_query_route_resp
// (include/uapi/rdma/rdma_user_cm.h). NodeGUID (network order as the device
// reports it) and IBDevIndex identify the RDMA device the id is bound to.
type UCMQueryRouteResp struct {
	_          structs.HostLayout
	NodeGUID   uint64
	IBRoute    [2]IBUserPathRec
	SrcAddr    SockaddrIn6
	DstAddr    SockaddrIn6
	NumPaths   uint32
	PortNum    uint8
	Reserved   [3]uint8
	IBDevIndex uint32
	Reserved1  uint32
}

// UCMQueryAddrResp is struct rdma_ucm_query_addr_resp
// (include/uapi/rdma/rdma_user_cm.h), the response of RDMA_USER_CM_CMD_QUERY
// with RDMA_USER_CM_QUERY_ADDR or _GID.
type UCMQueryAddrResp struct {
	_          structs.HostLayout
	NodeGUID   uint64
	PortNum    uint8
	Reserved   uint8
	PKey       uint16
	SrcSize    uint16
	DstSize    uint16
	SrcAddr    SockaddrStorage
	DstAddr    SockaddrStorage
	IBDevIndex uint32
	Reserved1  uint32
}

// UCMQueryPathResp is struct rdma_ucm_query_path_resp
// (include/uapi/rdma/rdma_user_cm.h) without its flexible array member
// path_data: NumPaths IBPathRecData follow it (DecodeUCMQueryPathResp).
type UCMQueryPathResp struct {
	_        structs.HostLayout
	NumPaths uint32
	Reserved uint32
}

// UCMQueryIBServiceResp is struct rdma_ucm_query_ib_service_resp
// (include/uapi/rdma/rdma_user_cm.h, newer than Linux 6.12) without its
// flexible array member recs: NumServiceRecs IBUserServiceRec follow it at
// offset 8 (DecodeUCMQueryIBServiceResp).
type UCMQueryIBServiceResp struct {
	_              structs.HostLayout
	NumServiceRecs uint32
	_              [4]byte
}

// UCMConnParam is struct rdma_ucm_conn_param
// (include/uapi/rdma/rdma_user_cm.h): connection parameters of connect and
// accept, and of CONNECT_REQUEST/CONNECT_RESPONSE/ESTABLISHED events. Valid
// must be 1 in a connect.
type UCMConnParam struct {
	_                  structs.HostLayout
	QPNum              uint32
	QKey               uint32
	PrivateData        [RDMA_MAX_PRIVATE_DATA]uint8
	PrivateDataLen     uint8
	SRQ                uint8
	ResponderResources uint8
	InitiatorDepth     uint8
	FlowControl        uint8
	RetryCount         uint8
	RNRRetryCount      uint8
	Valid              uint8
}

// Data returns the private data, PrivateData[:PrivateDataLen].
func (p *UCMConnParam) Data() []byte { return p.PrivateData[:p.PrivateDataLen] }

// SetData copies b into the private data and sets its length.
func (p *UCMConnParam) SetData(b []byte) error {
	return setPrivateData(p.PrivateData[:], &p.PrivateDataLen, b)
}

func setPrivateData(dst []byte, n *uint8, b []byte) error {
	if len(b) > 255 {
		return fmt.Errorf("private data is %d bytes; rdma_cm carries at most 255 (and less per port space, e.g. %d for an RDMA_PS_TCP connect)", len(b), MaxPrivateDataTCPConnect)
	}
	clear(dst)
	copy(dst, b)
	*n = uint8(len(b))
	return nil
}

// UCMUDParam is struct rdma_ucm_ud_param (include/uapi/rdma/rdma_user_cm.h):
// the remote QP of an RDMA_PS_UDP id, carried by ESTABLISHED and
// MULTICAST_JOIN events; AHAttr is what CREATE_AH needs to reach it. Like
// AHAttr, it is only 4-byte aligned, as the event's param union requires.
type UCMUDParam struct {
	_              structs.HostLayout
	QPNum          uint32
	QKey           uint32
	AHAttr         AHAttr
	PrivateData    [RDMA_MAX_PRIVATE_DATA]uint8
	PrivateDataLen uint8
	Reserved       [7]uint8
}

// Data returns the private data, PrivateData[:PrivateDataLen].
func (p *UCMUDParam) Data() []byte { return p.PrivateData[:p.PrivateDataLen] }

// SetData copies b into the private data and sets its length.
func (p *UCMUDParam) SetData(b []byte) error {
	return setPrivateData(p.PrivateData[:], &p.PrivateDataLen, b)
}

// UCMECE is struct rdma_ucm_ece (include/uapi/rdma/rdma_user_cm.h): enhanced
// connection establishment options (Linux 5.9+; zero for none).
type UCMECE struct {
	_        structs.HostLayout
	VendorID uint32
	AttrMod  uint32
}

// UCMConnect is struct rdma_ucm_connect (include/uapi/rdma/rdma_user_cm.h),
// the body of RDMA_USER_CM_CMD_CONNECT (rdma_connect). Completion is a
// CONNECT_RESPONSE (RC with a QP driven by the user), ESTABLISHED,
// REJECTED, UNREACHABLE or CONNECT_ERROR event.
type UCMConnect struct {
	_         structs.HostLayout
	ConnParam UCMConnParam
	ID        uint32
	Reserved  uint32
	ECE       UCMECE
}

// UCMListen is struct rdma_ucm_listen (include/uapi/rdma/rdma_user_cm.h), the
// body of RDMA_USER_CM_CMD_LISTEN (rdma_listen).
type UCMListen struct {
	_       structs.HostLayout
	ID      uint32
	Backlog uint32
}

// UCMAccept is struct rdma_ucm_accept (include/uapi/rdma/rdma_user_cm.h), the
// body of RDMA_USER_CM_CMD_ACCEPT (rdma_accept; on the active side after
// CONNECT_RESPONSE it sends the RTU). UID replaces the id's cookie.
type UCMAccept struct {
	_         structs.HostLayout
	UID       uint64
	ConnParam UCMConnParam
	ID        uint32
	Reserved  uint32
	ECE       UCMECE
}

// UCMReject is struct rdma_ucm_reject (include/uapi/rdma/rdma_user_cm.h), the
// body of RDMA_USER_CM_CMD_REJECT (rdma_reject). Reason is 0,
// IB_CM_REJ_CONSUMER_DEFINED or IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED.
type UCMReject struct {
	_              structs.HostLayout
	ID             uint32
	PrivateDataLen uint8
	Reason         uint8
	Reserved       [2]uint8
	PrivateData    [RDMA_MAX_PRIVATE_DATA]uint8
}

// SetData copies b into the private data and sets its length.
func (r *UCMReject) SetData(b []byte) error {
	return setPrivateData(r.PrivateData[:], &r.PrivateDataLen, b)
}

// UCMDisconnect is struct rdma_ucm_disconnect
// (include/uapi/rdma/rdma_user_cm.h), the body of RDMA_USER_CM_CMD_DISCONNECT
// (rdma_disconnect).
type UCMDisconnect struct {
	_  structs.HostLayout
	ID uint32
}

// SizeofIBUverbsQPAttr is sizeof(struct ib_uverbs_qp_attr), the size of
// QPAttr: the response of RDMA_USER_CM_CMD_INIT_QP_ATTR.
const SizeofIBUverbsQPAttr = 144

// DecodeUCMInitQPAttrResp decodes the response of INIT_QP_ATTR: the QP
// attributes and, in QPAttrMask, the IB_QP_* mask to pass to MODIFY_QP.
func DecodeUCMInitQPAttrResp(b []byte) (QPAttr, error) {
	var a QPAttr
	if len(b) < SizeofIBUverbsQPAttr {
		return a, fmt.Errorf("rdma_cm init_qp_attr response: %d bytes, want %d", len(b), SizeofIBUverbsQPAttr)
	}
	mustDecode(b[:SizeofIBUverbsQPAttr], &a)
	return a, nil
}

// UCMInitQPAttr is struct rdma_ucm_init_qp_attr
// (include/uapi/rdma/rdma_user_cm.h), the body of
// RDMA_USER_CM_CMD_INIT_QP_ATTR (rdma_init_qp_attr): the kernel fills the
// struct ib_uverbs_qp_attr at Response with the attributes and mask that
// move the id's QP to QPState (an IB_QPS_* value), ready for MODIFY_QP.
type UCMInitQPAttr struct {
	_        structs.HostLayout
	Response uint64
	ID       uint32
	QPState  uint32
}

// UCMNotify is struct rdma_ucm_notify (include/uapi/rdma/rdma_user_cm.h), the
// body of RDMA_USER_CM_CMD_NOTIFY (rdma_notify): Event is an ib_event_type,
// in practice IB_EVENT_COMM_EST.
type UCMNotify struct {
	_     structs.HostLayout
	ID    uint32
	Event uint32
}

// UCMJoinIPMcast is struct rdma_ucm_join_ip_mcast
// (include/uapi/rdma/rdma_user_cm.h), the body of
// RDMA_USER_CM_CMD_JOIN_IP_MCAST (the old join). UID is the cookie of the
// multicast events. Response → UCMCreateIDResp (the multicast id).
type UCMJoinIPMcast struct {
	_        structs.HostLayout
	Response uint64
	UID      uint64
	Addr     SockaddrIn6
	ID       uint32
}

// UCMJoinMcast is struct rdma_ucm_join_mcast (include/uapi/rdma/rdma_user_cm.h),
// the body of RDMA_USER_CM_CMD_JOIN_MCAST (rdma_join_multicast_ex). JoinFlags
// is an RDMA_MC_JOIN_FLAG_*. Response → UCMCreateIDResp (the multicast id).
type UCMJoinMcast struct {
	_         structs.HostLayout
	Response  uint64
	UID       uint64
	ID        uint32
	AddrSize  uint16
	JoinFlags uint16
	Addr      SockaddrStorage
}

// UCMGetEvent is struct rdma_ucm_get_event (include/uapi/rdma/rdma_user_cm.h),
// the body of RDMA_USER_CM_CMD_GET_EVENT (rdma_get_cm_event). It blocks until
// an event is queued, or fails with EAGAIN on a non-blocking fd.
// Response → UCMEventResp.
type UCMGetEvent struct {
	_        structs.HostLayout
	Response uint64
}

// SizeofUCMEventParam is the size of the param union of rdma_ucm_event_resp.
const SizeofUCMEventParam = 304

// UCMEventResp is struct rdma_ucm_event_resp (include/uapi/rdma/rdma_user_cm.h),
// the response of GET_EVENT. UID is the cookie of the id the event is for,
// except for CONNECT_REQUEST, where UID is the listener's and ID is the new
// id's. Status is 0, a negative errno, or for REJECTED the reject reason.
//
// The C param union (conn: rdma_ucm_conn_param, ud: rdma_ucm_ud_param) sits
// at offset 20, only 4-byte aligned; it is ported as the byte array Param, read
// with ConnParam and UDParam and written with SetConnParam and SetUDParam.
type UCMEventResp struct {
	_        structs.HostLayout
	UID      uint64
	ID       uint32
	Event    uint32
	Status   uint32
	Param    [SizeofUCMEventParam]byte // union param {conn; ud}
	Reserved uint32
	ECE      UCMECE
}

// EventType returns Event as a CMEventType.
func (e *UCMEventResp) EventType() CMEventType { return CMEventType(e.Event) }

// StatusCode returns Status as the signed value the kernel stored (an int in
// struct rdma_cm_event): 0, a negative errno, or a reject reason.
func (e *UCMEventResp) StatusCode() int32 { return int32(e.Status) }

// ConnParam decodes Param as the conn member of the union (RC events).
func (e *UCMEventResp) ConnParam() UCMConnParam {
	var p UCMConnParam
	mustDecode(e.Param[:], &p)
	return p
}

// UDParam decodes Param as the ud member of the union (RDMA_PS_UDP and
// multicast events).
func (e *UCMEventResp) UDParam() UCMUDParam {
	var p UCMUDParam
	mustDecode(e.Param[:], &p)
	return p
}

// Arg returns the union's arg32 pair as the 64-bit value a WRITE_CM_EVENT
// stored (RDMA_CM_EVENT_USER events; newer than Linux 6.12).
func (e *UCMEventResp) Arg() uint64 { return binary.NativeEndian.Uint64(e.Param[:8]) }

// SetConnParam stores p in Param (the rest of the union is zeroed).
func (e *UCMEventResp) SetConnParam(p *UCMConnParam) {
	e.Param = [SizeofUCMEventParam]byte{}
	mustEncode(e.Param[:], p)
}

// SetUDParam stores p in Param.
func (e *UCMEventResp) SetUDParam(p *UCMUDParam) {
	e.Param = [SizeofUCMEventParam]byte{}
	mustEncode(e.Param[:], p)
}

// mustDecode and mustEncode work on fixed-size structs and buffers sized at
// compile time; an error is a bug in this file.
func mustDecode(b []byte, v any) {
	if _, err := binary.Decode(b, binary.NativeEndian, v); err != nil {
		panic("abi: " + err.Error())
	}
}

func mustEncode(b []byte, v any) {
	if _, err := binary.Encode(b, binary.NativeEndian, v); err != nil {
		panic("abi: " + err.Error())
	}
}

// SizeofUCMEventResp is sizeof(struct rdma_ucm_event_resp), the Out to give
// GET_EVENT.
const SizeofUCMEventResp = 336

// MinSizeofUCMEventResp is the smallest event the kernel writes: kernels
// before Linux 5.9 have no reserved and ece fields, and current kernels
// accept an Out this small.
const MinSizeofUCMEventResp = SizeofUCMEventResp - 4 - 8

// DecodeUCMEventResp decodes an event as GET_EVENT wrote it. b must hold at
// least MinSizeofUCMEventResp bytes; missing trailing fields (reserved, ece)
// read as zero and bytes beyond SizeofUCMEventResp are ignored.
func DecodeUCMEventResp(b []byte) (UCMEventResp, error) {
	var e UCMEventResp
	if len(b) < MinSizeofUCMEventResp {
		return e, fmt.Errorf("rdma_cm event: %d bytes, want at least %d (give GET_EVENT an Out of %d)", len(b), MinSizeofUCMEventResp, SizeofUCMEventResp)
	}
	var full [SizeofUCMEventResp]byte
	copy(full[:], b)
	mustDecode(full[:], &e)
	return e, nil
}

// UCMSetOption is struct rdma_ucm_set_option
// (include/uapi/rdma/rdma_user_cm.h), the body of RDMA_USER_CM_CMD_SET_OPTION
// (rdma_set_option). OptVal is the address of OptLen bytes of value; see the
// RDMA_OPTION_* constants for what each option expects.
type UCMSetOption struct {
	_       structs.HostLayout
	OptVal  uint64
	ID      uint32
	Level   uint32
	OptName uint32
	OptLen  uint32
}

// UCMMigrateID is struct rdma_ucm_migrate_id (include/uapi/rdma/rdma_user_cm.h),
// the body of RDMA_USER_CM_CMD_MIGRATE_ID (rdma_migrate_id), written to the
// rdma_cm fd the id moves to; FD is the fd it comes from.
// Response → UCMMigrateResp.
type UCMMigrateID struct {
	_        structs.HostLayout
	Response uint64
	ID       uint32
	FD       uint32
}

// UCMMigrateResp is struct rdma_ucm_migrate_resp
// (include/uapi/rdma/rdma_user_cm.h): the events reported on the old fd.
type UCMMigrateResp struct {
	_              structs.HostLayout
	EventsReported uint32
}

// UCMIBService is struct rdma_ucm_ib_service
// (include/uapi/rdma/rdma_user_cm.h, newer than Linux 6.12): the IB service to
// resolve, by ServiceID and/or ServiceName as Flags says.
type UCMIBService struct {
	_           structs.HostLayout
	ServiceID   uint64
	ServiceName [RDMA_USER_CM_IB_SERVICE_NAME_SIZE]uint8
	Flags       uint32
	Reserved    uint32
}

// UCMResolveIBService is struct rdma_ucm_resolve_ib_service
// (include/uapi/rdma/rdma_user_cm.h, newer than Linux 6.12), the body of
// RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE. Completion is an ADDRINFO_RESOLVED or
// ADDRINFO_ERROR event; QUERY with RDMA_USER_CM_QUERY_IB_SERVICE then returns
// the records.
type UCMResolveIBService struct {
	_        structs.HostLayout
	ID       uint32
	Reserved uint32
	IBS      UCMIBService
}

// UCMWriteCMEvent is struct rdma_ucm_write_cm_event
// (include/uapi/rdma/rdma_user_cm.h, newer than Linux 6.12), the body of
// RDMA_USER_CM_CMD_WRITE_CM_EVENT (rdma_write_cm_event): it queues an event
// (RDMA_CM_EVENT_USER) with Status and the union's arg on the id. The C
// union param {conn; ud; __u64 arg} is 8-byte aligned here and ported as
// bytes: SetArg stores arg.
type UCMWriteCMEvent struct {
	_        structs.HostLayout
	ID       uint32
	Reserved uint32
	Event    uint32
	Status   uint32
	Param    [SizeofUCMEventParam]byte // union param {conn; ud; arg}
}

// SetArg stores arg, the value the event's UCMEventResp.Arg returns.
func (w *UCMWriteCMEvent) SetArg(arg uint64) {
	w.Param = [SizeofUCMEventParam]byte{}
	binary.NativeEndian.PutUint64(w.Param[:], arg)
}

// UCMBody is a command struct that EncodeUCMCommand accepts: a pointer to
// one of the UCM* command types. The interface is sealed.
type UCMBody interface{ isUCMBody() }

func (*UCMCreateID) isUCMBody()         {}
func (*UCMDestroyID) isUCMBody()        {}
func (*UCMBindIP) isUCMBody()           {}
func (*UCMBind) isUCMBody()             {}
func (*UCMResolveIP) isUCMBody()        {}
func (*UCMResolveAddr) isUCMBody()      {}
func (*UCMResolveRoute) isUCMBody()     {}
func (*UCMQuery) isUCMBody()            {}
func (*UCMConnect) isUCMBody()          {}
func (*UCMListen) isUCMBody()           {}
func (*UCMAccept) isUCMBody()           {}
func (*UCMReject) isUCMBody()           {}
func (*UCMDisconnect) isUCMBody()       {}
func (*UCMInitQPAttr) isUCMBody()       {}
func (*UCMNotify) isUCMBody()           {}
func (*UCMJoinIPMcast) isUCMBody()      {}
func (*UCMJoinMcast) isUCMBody()        {}
func (*UCMGetEvent) isUCMBody()         {}
func (*UCMSetOption) isUCMBody()        {}
func (*UCMMigrateID) isUCMBody()        {}
func (*UCMResolveIBService) isUCMBody() {}
func (*UCMWriteCMEvent) isUCMBody()     {}

// SizeofUCMCmdHdr is sizeof(struct rdma_ucm_cmd_hdr).
const SizeofUCMCmdHdr = 8

// UCMRespSize returns the smallest response buffer (the header's Out) the
// kernel accepts for command cmd with body, and 0 for commands without a
// response. For QUERY with RDMA_USER_CM_QUERY_PATH it is the fixed part only;
// room for the paths comes on top (72 bytes each, at most 6 are returned).
func UCMRespSize(cmd uint32, body UCMBody) (int, error) {
	switch cmd {
	case RDMA_USER_CM_CMD_CREATE_ID, RDMA_USER_CM_CMD_JOIN_IP_MCAST, RDMA_USER_CM_CMD_JOIN_MCAST:
		return 4, nil // rdma_ucm_create_id_resp
	case RDMA_USER_CM_CMD_DESTROY_ID, RDMA_USER_CM_CMD_LEAVE_MCAST, RDMA_USER_CM_CMD_MIGRATE_ID:
		return 4, nil // rdma_ucm_destroy_id_resp, rdma_ucm_migrate_resp
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
		return 208, nil // rdma_ucm_query_route_resp
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		return SizeofIBUverbsQPAttr, nil
	case RDMA_USER_CM_CMD_GET_EVENT:
		return MinSizeofUCMEventResp, nil
	case RDMA_USER_CM_CMD_QUERY:
		q, ok := body.(*UCMQuery)
		if !ok {
			return 0, fmt.Errorf("%s takes *abi.UCMQuery, got %T", UCMCmdString(cmd), body)
		}
		switch q.Option {
		case RDMA_USER_CM_QUERY_ADDR, RDMA_USER_CM_QUERY_GID:
			return 280, nil // rdma_ucm_query_addr_resp
		case RDMA_USER_CM_QUERY_PATH:
			return 8, nil // rdma_ucm_query_path_resp
		case RDMA_USER_CM_QUERY_IB_SERVICE:
			return 8, nil // rdma_ucm_query_ib_service_resp
		}
		return 0, fmt.Errorf("%s: option %d is not RDMA_USER_CM_QUERY_ADDR, _PATH, _GID or _IB_SERVICE", UCMCmdString(cmd), q.Option)
	}
	return 0, nil
}

// ucmBodyOK reports whether body is the struct command cmd takes.
func ucmBodyOK(cmd uint32, body UCMBody) (want string, ok bool) {
	switch cmd {
	case RDMA_USER_CM_CMD_CREATE_ID:
		_, ok = body.(*UCMCreateID)
		return "*abi.UCMCreateID", ok
	case RDMA_USER_CM_CMD_DESTROY_ID, RDMA_USER_CM_CMD_LEAVE_MCAST:
		_, ok = body.(*UCMDestroyID)
		return "*abi.UCMDestroyID", ok
	case RDMA_USER_CM_CMD_BIND_IP:
		_, ok = body.(*UCMBindIP)
		return "*abi.UCMBindIP", ok
	case RDMA_USER_CM_CMD_RESOLVE_IP:
		_, ok = body.(*UCMResolveIP)
		return "*abi.UCMResolveIP", ok
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
		_, ok = body.(*UCMResolveRoute)
		return "*abi.UCMResolveRoute", ok
	case RDMA_USER_CM_CMD_QUERY_ROUTE, RDMA_USER_CM_CMD_QUERY:
		_, ok = body.(*UCMQuery)
		return "*abi.UCMQuery", ok
	case RDMA_USER_CM_CMD_CONNECT:
		_, ok = body.(*UCMConnect)
		return "*abi.UCMConnect", ok
	case RDMA_USER_CM_CMD_LISTEN:
		_, ok = body.(*UCMListen)
		return "*abi.UCMListen", ok
	case RDMA_USER_CM_CMD_ACCEPT:
		_, ok = body.(*UCMAccept)
		return "*abi.UCMAccept", ok
	case RDMA_USER_CM_CMD_REJECT:
		_, ok = body.(*UCMReject)
		return "*abi.UCMReject", ok
	case RDMA_USER_CM_CMD_DISCONNECT:
		_, ok = body.(*UCMDisconnect)
		return "*abi.UCMDisconnect", ok
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		_, ok = body.(*UCMInitQPAttr)
		return "*abi.UCMInitQPAttr", ok
	case RDMA_USER_CM_CMD_GET_EVENT:
		_, ok = body.(*UCMGetEvent)
		return "*abi.UCMGetEvent", ok
	case RDMA_USER_CM_CMD_SET_OPTION:
		_, ok = body.(*UCMSetOption)
		return "*abi.UCMSetOption", ok
	case RDMA_USER_CM_CMD_NOTIFY:
		_, ok = body.(*UCMNotify)
		return "*abi.UCMNotify", ok
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
		_, ok = body.(*UCMJoinIPMcast)
		return "*abi.UCMJoinIPMcast", ok
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		_, ok = body.(*UCMMigrateID)
		return "*abi.UCMMigrateID", ok
	case RDMA_USER_CM_CMD_BIND:
		_, ok = body.(*UCMBind)
		return "*abi.UCMBind", ok
	case RDMA_USER_CM_CMD_RESOLVE_ADDR:
		_, ok = body.(*UCMResolveAddr)
		return "*abi.UCMResolveAddr", ok
	case RDMA_USER_CM_CMD_JOIN_MCAST:
		_, ok = body.(*UCMJoinMcast)
		return "*abi.UCMJoinMcast", ok
	case RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE:
		_, ok = body.(*UCMResolveIBService)
		return "*abi.UCMResolveIBService", ok
	case RDMA_USER_CM_CMD_WRITE_CM_EVENT:
		_, ok = body.(*UCMWriteCMEvent)
		return "*abi.UCMWriteCMEvent", ok
	}
	return "", false
}

// checkAddrSize checks a size field against the family of its address.
func checkAddrSize(cmd uint32, field string, size uint16, s *SockaddrStorage, optional bool) error {
	if optional && size == 0 {
		return nil
	}
	if want := s.Size(); size == 0 || size != want {
		return fmt.Errorf("%s: %s is %d but the address has family %d (size %d); set it from SockaddrStorageFrom or SockaddrStorage.Size", UCMCmdString(cmd), field, size, s.Family(), want)
	}
	return nil
}

// EncodeUCMCommand returns the complete buffer for one write(2) of command
// cmd (an RDMA_USER_CM_CMD_*) to /dev/infiniband/rdma_cm: the rdma_ucm_cmd_hdr
// with In = the size of body and Out = out, followed by body. out is the size
// of the response buffer at body's Response (or OptVal) address; it must be
// at least UCMRespSize(cmd, body), and 0 for commands without a response. The
// caller stores the response address in body before encoding and keeps that
// memory alive and unmoved until write returns.
//
// It fails when body is not the struct cmd takes, when cmd is unknown or
// GET_OPTION (which kernels do not implement), when out is too small, or when
// an address size field does not match its address.
func EncodeUCMCommand(cmd uint32, body UCMBody, out int) ([]byte, error) {
	return AppendUCMCommand(nil, cmd, body, out)
}

// AppendUCMCommand is EncodeUCMCommand appending to dst.
func AppendUCMCommand(dst []byte, cmd uint32, body UCMBody, out int) ([]byte, error) {
	if cmd == RDMA_USER_CM_CMD_GET_OPTION {
		return dst, fmt.Errorf("%s: the kernel does not implement it (ENOSYS)", UCMCmdString(cmd))
	}
	want, ok := ucmBodyOK(cmd, body)
	if want == "" {
		return dst, fmt.Errorf("%s: not a command of rdma_cm ABI %d", UCMCmdString(cmd), RDMA_USER_CM_ABI_VERSION)
	}
	if !ok {
		return dst, fmt.Errorf("%s takes %s, got %T", UCMCmdString(cmd), want, body)
	}
	minOut, err := UCMRespSize(cmd, body)
	if err != nil {
		return dst, err
	}
	switch {
	case out < 0 || out > 0xffff:
		return dst, fmt.Errorf("%s: response size %d out of range 0..65535", UCMCmdString(cmd), out)
	case minOut == 0 && out != 0:
		return dst, fmt.Errorf("%s has no response; pass a response size of 0, not %d", UCMCmdString(cmd), out)
	case out < minOut:
		return dst, fmt.Errorf("%s: response buffer of %d bytes, the kernel needs at least %d", UCMCmdString(cmd), out, minOut)
	}
	switch b := body.(type) {
	case *UCMBind:
		err = checkAddrSize(cmd, "AddrSize", b.AddrSize, &b.Addr, false)
	case *UCMJoinMcast:
		err = checkAddrSize(cmd, "AddrSize", b.AddrSize, &b.Addr, false)
	case *UCMResolveAddr:
		if err = checkAddrSize(cmd, "SrcSize", b.SrcSize, &b.SrcAddr, true); err == nil {
			err = checkAddrSize(cmd, "DstSize", b.DstSize, &b.DstAddr, false)
		}
	}
	if err != nil {
		return dst, err
	}
	in := binary.Size(body)
	if in < 0 {
		return dst, fmt.Errorf("%s: %T is not a fixed-size struct", UCMCmdString(cmd), body)
	}
	hdr := UCMCmdHdr{Cmd: cmd, In: uint16(in), Out: uint16(out)}
	dst = binary.NativeEndian.AppendUint32(dst, hdr.Cmd)
	dst = binary.NativeEndian.AppendUint16(dst, hdr.In)
	dst = binary.NativeEndian.AppendUint16(dst, hdr.Out)
	return binary.Append(dst, binary.NativeEndian, body)
}

// UCMResp is a fixed-size response struct DecodeUCMResp fills: a pointer to
// UCMCreateIDResp, UCMDestroyIDResp, UCMMigrateResp, UCMQueryRouteResp,
// UCMQueryAddrResp, UCMQueryPathResp, UCMQueryIBServiceResp or UCMEventResp. The interface is sealed.
type UCMResp interface{ isUCMResp() }

func (*UCMCreateIDResp) isUCMResp()       {}
func (*UCMDestroyIDResp) isUCMResp()      {}
func (*UCMMigrateResp) isUCMResp()        {}
func (*UCMQueryRouteResp) isUCMResp()     {}
func (*UCMQueryAddrResp) isUCMResp()      {}
func (*UCMQueryPathResp) isUCMResp()      {}
func (*UCMQueryIBServiceResp) isUCMResp() {}
func (*UCMEventResp) isUCMResp()          {}

// DecodeUCMResp fills resp from the response buffer b the kernel wrote. b
// must be at least as large as the response struct.
func DecodeUCMResp(b []byte, resp UCMResp) error {
	n := binary.Size(resp)
	if n < 0 {
		return fmt.Errorf("rdma_cm response: %T is not a fixed-size struct", resp)
	}
	if len(b) < n {
		return fmt.Errorf("rdma_cm response %T: %d bytes, want %d", resp, len(b), n)
	}
	mustDecode(b[:n], resp)
	return nil
}

// SizeofIBPathRecData is sizeof(struct ib_path_rec_data).
const SizeofIBPathRecData = 72

// DecodeUCMQueryPathResp decodes the response of QUERY with
// RDMA_USER_CM_QUERY_PATH: the fixed part and its NumPaths path records. It
// fails if b is too short for the paths the kernel says it wrote.
func DecodeUCMQueryPathResp(b []byte) (UCMQueryPathResp, []IBPathRecData, error) {
	var r UCMQueryPathResp
	if err := DecodeUCMResp(b, &r); err != nil {
		return r, nil, err
	}
	rest := b[8:]
	if uint64(r.NumPaths)*SizeofIBPathRecData > uint64(len(rest)) {
		return r, nil, fmt.Errorf("rdma_cm query path: %d paths need %d bytes after the header, have %d (enlarge the response buffer)", r.NumPaths, uint64(r.NumPaths)*SizeofIBPathRecData, len(rest))
	}
	paths := make([]IBPathRecData, r.NumPaths)
	for i := range paths {
		mustDecode(rest[i*SizeofIBPathRecData:], &paths[i])
	}
	return r, paths, nil
}

// SizeofIBUserServiceRec is sizeof(struct ib_user_service_rec).
const SizeofIBUserServiceRec = 176

// DecodeUCMQueryIBServiceResp decodes the response of QUERY with
// RDMA_USER_CM_QUERY_IB_SERVICE: the fixed part and its NumServiceRecs
// service records. It fails if b is too short for the records the kernel
// says it wrote.
func DecodeUCMQueryIBServiceResp(b []byte) (UCMQueryIBServiceResp, []IBUserServiceRec, error) {
	var r UCMQueryIBServiceResp
	if err := DecodeUCMResp(b, &r); err != nil {
		return r, nil, err
	}
	rest := b[8:]
	if need := uint64(r.NumServiceRecs) * SizeofIBUserServiceRec; need > uint64(len(rest)) {
		return r, nil, fmt.Errorf("rdma_cm query ib service: %d records need %d bytes after the header, have %d (enlarge the response buffer)", r.NumServiceRecs, need, len(rest))
	}
	recs := make([]IBUserServiceRec, r.NumServiceRecs)
	for i := range recs {
		mustDecode(rest[i*SizeofIBUserServiceRec:], &recs[i])
	}
	return r, recs, nil
}
