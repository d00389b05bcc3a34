// Copyright 2026 The rdmago Authors.

package abi

import "structs"

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

// SizeofUCMEventResp is sizeof(struct rdma_ucm_event_resp), the Out to give
// GET_EVENT.
const SizeofUCMEventResp = 336

// MinSizeofUCMEventResp is the smallest event the kernel writes: kernels
// before Linux 5.9 have no reserved and ece fields, and current kernels
// accept an Out this small.
const MinSizeofUCMEventResp = SizeofUCMEventResp - 4 - 8

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

// SizeofUCMCmdHdr is sizeof(struct rdma_ucm_cmd_hdr).
const SizeofUCMCmdHdr = 8

// SizeofIBPathRecData is sizeof(struct ib_path_rec_data).
const SizeofIBPathRecData = 72

// SizeofIBUserServiceRec is sizeof(struct ib_user_service_rec).
const SizeofIBUserServiceRec = 176
