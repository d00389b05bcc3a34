// Copyright 2026 The rdmago Authors.

package abi

import "structs"

// This file is include/uapi/rdma/ib_user_verbs.h: the write() command ABI of
// /dev/infiniband/uverbsN (ABI version 6). It was ported by hand from the copy in
// rdma-core's kernel-headers (commit 691953d, 2026-08) and
// checked against /usr/include/rdma (rdma-core v44, Linux 6.1) and against the
// BTF of Debian's 6.1.0-56 and 6.12.117 kernels. Newer additions are marked with
// the first kernel that has them.
//
// Every struct keeps the C field order; padding is written out; pointers the kernel
// dereferences (response, addresses) are uint64. Flexible "driver_data[]" tails are
// not Go fields: the driver part follows the core struct in the same buffer.
//
// The flow-steering structs (ib_uverbs_flow_*) are not ported: no software
// provider implements flows.
//
// The second half of this file holds the enums of include/rdma/ib_verbs.h whose
// values cross the ABI unchanged (work completion status and opcodes, QP states,
// attribute masks, send flags, event types, ...): the kernel writes them into CQEs
// and responses and reads them from commands, so they are part of the ABI even
// though that header is not UAPI.

// IB_USER_VERBS_ABI_VERSION is the uverbs ABI this file ports; the kernel
// publishes its own in /sys/class/infiniband_verbs/abi_version.
const (
	IB_USER_VERBS_ABI_VERSION   = 6
	IB_USER_VERBS_CMD_THRESHOLD = 50
)

// enum ib_uverbs_write_cmds
const (
	IB_USER_VERBS_CMD_GET_CONTEXT         = 0
	IB_USER_VERBS_CMD_QUERY_DEVICE        = 1
	IB_USER_VERBS_CMD_QUERY_PORT          = 2
	IB_USER_VERBS_CMD_ALLOC_PD            = 3
	IB_USER_VERBS_CMD_DEALLOC_PD          = 4
	IB_USER_VERBS_CMD_CREATE_AH           = 5
	IB_USER_VERBS_CMD_MODIFY_AH           = 6
	IB_USER_VERBS_CMD_QUERY_AH            = 7
	IB_USER_VERBS_CMD_DESTROY_AH          = 8
	IB_USER_VERBS_CMD_REG_MR              = 9
	IB_USER_VERBS_CMD_REG_SMR             = 10
	IB_USER_VERBS_CMD_REREG_MR            = 11
	IB_USER_VERBS_CMD_QUERY_MR            = 12
	IB_USER_VERBS_CMD_DEREG_MR            = 13
	IB_USER_VERBS_CMD_ALLOC_MW            = 14
	IB_USER_VERBS_CMD_BIND_MW             = 15
	IB_USER_VERBS_CMD_DEALLOC_MW          = 16
	IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL = 17
	IB_USER_VERBS_CMD_CREATE_CQ           = 18
	IB_USER_VERBS_CMD_RESIZE_CQ           = 19
	IB_USER_VERBS_CMD_DESTROY_CQ          = 20
	IB_USER_VERBS_CMD_POLL_CQ             = 21
	IB_USER_VERBS_CMD_PEEK_CQ             = 22
	IB_USER_VERBS_CMD_REQ_NOTIFY_CQ       = 23
	IB_USER_VERBS_CMD_CREATE_QP           = 24
	IB_USER_VERBS_CMD_QUERY_QP            = 25
	IB_USER_VERBS_CMD_MODIFY_QP           = 26
	IB_USER_VERBS_CMD_DESTROY_QP          = 27
	IB_USER_VERBS_CMD_POST_SEND           = 28
	IB_USER_VERBS_CMD_POST_RECV           = 29
	IB_USER_VERBS_CMD_ATTACH_MCAST        = 30
	IB_USER_VERBS_CMD_DETACH_MCAST        = 31
	IB_USER_VERBS_CMD_CREATE_SRQ          = 32
	IB_USER_VERBS_CMD_MODIFY_SRQ          = 33
	IB_USER_VERBS_CMD_QUERY_SRQ           = 34
	IB_USER_VERBS_CMD_DESTROY_SRQ         = 35
	IB_USER_VERBS_CMD_POST_SRQ_RECV       = 36
	IB_USER_VERBS_CMD_OPEN_XRCD           = 37
	IB_USER_VERBS_CMD_CLOSE_XRCD          = 38
	IB_USER_VERBS_CMD_CREATE_XSRQ         = 39
	IB_USER_VERBS_CMD_OPEN_QP             = 40
)

// Extended commands (sent with IB_USER_VERBS_CMD_FLAG_EXTENDED).
const (
	IB_USER_VERBS_EX_CMD_QUERY_DEVICE        = IB_USER_VERBS_CMD_QUERY_DEVICE
	IB_USER_VERBS_EX_CMD_CREATE_CQ           = IB_USER_VERBS_CMD_CREATE_CQ
	IB_USER_VERBS_EX_CMD_CREATE_QP           = IB_USER_VERBS_CMD_CREATE_QP
	IB_USER_VERBS_EX_CMD_MODIFY_QP           = IB_USER_VERBS_CMD_MODIFY_QP
	IB_USER_VERBS_EX_CMD_CREATE_FLOW         = IB_USER_VERBS_CMD_THRESHOLD
	IB_USER_VERBS_EX_CMD_DESTROY_FLOW        = 51
	IB_USER_VERBS_EX_CMD_CREATE_WQ           = 52
	IB_USER_VERBS_EX_CMD_MODIFY_WQ           = 53
	IB_USER_VERBS_EX_CMD_DESTROY_WQ          = 54
	IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL  = 55
	IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL = 56
	IB_USER_VERBS_EX_CMD_MODIFY_CQ           = 57
)

// Command word flags.
const (
	IB_USER_VERBS_CMD_COMMAND_MASK  = 0xff
	IB_USER_VERBS_CMD_FLAG_EXTENDED = 0x80000000
)

// AsyncEventDesc is struct ib_uverbs_async_event_desc
// (include/uapi/rdma/ib_user_verbs.h): one record read from the async event fd.
// Element is the user_handle of the CQ, QP, SRQ or WQ, or the port number.
type AsyncEventDesc struct {
	_         structs.HostLayout
	Element   uint64
	EventType uint32 // enum ib_event_type
	Reserved  uint32
}

// CompEventDesc is struct ib_uverbs_comp_event_desc
// (include/uapi/rdma/ib_user_verbs.h): one record read from a completion channel.
type CompEventDesc struct {
	_        structs.HostLayout
	CQHandle uint64 // the CQ's user_handle
}

// CQModerationCaps is struct ib_uverbs_cq_moderation_caps
// (include/uapi/rdma/ib_user_verbs.h).
type CQModerationCaps struct {
	_                     structs.HostLayout
	MaxCQModerationCount  uint16
	MaxCQModerationPeriod uint16
	Reserved              uint32
}

// CmdHdr is struct ib_uverbs_cmd_hdr (include/uapi/rdma/ib_user_verbs.h). For a
// plain command InWords and OutWords count 4-byte words and InWords includes
// this header; for an extended command they count 8-byte words of the core
// command and response, headers excluded (see ExCmdHdr).
type CmdHdr struct {
	_        structs.HostLayout
	Command  uint32
	InWords  uint16
	OutWords uint16
}

// ExCmdHdr is struct ib_uverbs_ex_cmd_hdr (include/uapi/rdma/ib_user_verbs.h),
// which follows CmdHdr in extended commands.
type ExCmdHdr struct {
	_                structs.HostLayout
	Response         uint64
	ProviderInWords  uint16
	ProviderOutWords uint16
	CmdHdrReserved   uint32
}

// GetContext is struct ib_uverbs_get_context (include/uapi/rdma/ib_user_verbs.h).
type GetContext struct {
	_        structs.HostLayout
	Response uint64
}

// GetContextResp is struct ib_uverbs_get_context_resp
// (include/uapi/rdma/ib_user_verbs.h).
type GetContextResp struct {
	_              structs.HostLayout
	AsyncFD        uint32
	NumCompVectors uint32
}

// QueryDevice is struct ib_uverbs_query_device (include/uapi/rdma/ib_user_verbs.h).
type QueryDevice struct {
	_        structs.HostLayout
	Response uint64
}

// QueryDeviceResp is struct ib_uverbs_query_device_resp
// (include/uapi/rdma/ib_user_verbs.h). NodeGUID and SysImageGUID are big endian.
type QueryDeviceResp struct {
	_                     structs.HostLayout
	FwVer                 uint64
	NodeGUID              uint64 // __be64
	SysImageGUID          uint64 // __be64
	MaxMRSize             uint64
	PageSizeCap           uint64
	VendorID              uint32
	VendorPartID          uint32
	HwVer                 uint32
	MaxQP                 uint32
	MaxQPWR               uint32
	DeviceCapFlags        uint32
	MaxSGE                uint32
	MaxSGERd              uint32
	MaxCQ                 uint32
	MaxCQE                uint32
	MaxMR                 uint32
	MaxPD                 uint32
	MaxQPRdAtom           uint32
	MaxEERdAtom           uint32
	MaxResRdAtom          uint32
	MaxQPInitRdAtom       uint32
	MaxEEInitRdAtom       uint32
	AtomicCap             uint32
	MaxEE                 uint32
	MaxRDD                uint32
	MaxMW                 uint32
	MaxRawIPv6QP          uint32
	MaxRawEthyQP          uint32
	MaxMcastGrp           uint32
	MaxMcastQPAttach      uint32
	MaxTotalMcastQPAttach uint32
	MaxAH                 uint32
	MaxFMR                uint32
	MaxMapPerFMR          uint32
	MaxSRQ                uint32
	MaxSRQWR              uint32
	MaxSRQSGE             uint32
	MaxPkeys              uint16
	LocalCAAckDelay       uint8
	PhysPortCnt           uint8
	Reserved              [4]uint8
}

// ExQueryDevice is struct ib_uverbs_ex_query_device
// (include/uapi/rdma/ib_user_verbs.h).
type ExQueryDevice struct {
	_        structs.HostLayout
	CompMask uint32
	Reserved uint32
}

// ODPTransportCaps is the anonymous per_transport_caps struct inside
// struct ib_uverbs_odp_caps.
type ODPTransportCaps struct {
	_         structs.HostLayout
	RCODPCaps uint32
	UCODPCaps uint32
	UDODPCaps uint32
}

// ODPCaps is struct ib_uverbs_odp_caps (include/uapi/rdma/ib_user_verbs.h).
type ODPCaps struct {
	_                structs.HostLayout
	GeneralCaps      uint64
	PerTransportCaps ODPTransportCaps
	Reserved         uint32
}

// RSSCaps is struct ib_uverbs_rss_caps (include/uapi/rdma/ib_user_verbs.h).
type RSSCaps struct {
	_                          structs.HostLayout
	SupportedQPTs              uint32
	MaxRWQIndirectionTables    uint32
	MaxRWQIndirectionTableSize uint32
	Reserved                   uint32
}

// TMCaps is struct ib_uverbs_tm_caps (include/uapi/rdma/ib_user_verbs.h).
type TMCaps struct {
	_              structs.HostLayout
	MaxRndvHdrSize uint32
	MaxNumTags     uint32
	Flags          uint32
	MaxOps         uint32
	MaxSGE         uint32
	Reserved       uint32
}

// ExQueryDeviceResp is struct ib_uverbs_ex_query_device_resp
// (include/uapi/rdma/ib_user_verbs.h). The kernel fills ResponseLength with the
// number of bytes it wrote; older kernels write less.
type ExQueryDeviceResp struct {
	_                structs.HostLayout
	Base             QueryDeviceResp
	CompMask         uint32
	ResponseLength   uint32
	ODPCaps          ODPCaps
	TimestampMask    uint64
	HCACoreClock     uint64 // kHz
	DeviceCapFlagsEx uint64
	RSSCaps          RSSCaps
	MaxWQTypeRQ      uint32
	RawPacketCaps    uint32
	TMCaps           TMCaps
	CQModerationCaps CQModerationCaps
	MaxDMSize        uint64
	XRCODPCaps       uint32
	Reserved         uint32
}

// QueryPort is struct ib_uverbs_query_port (include/uapi/rdma/ib_user_verbs.h).
type QueryPort struct {
	_        structs.HostLayout
	Response uint64
	PortNum  uint8
	Reserved [7]uint8
}

// QueryPortResp is struct ib_uverbs_query_port_resp
// (include/uapi/rdma/ib_user_verbs.h).
type QueryPortResp struct {
	_             structs.HostLayout
	PortCapFlags  uint32 // enum ib_uverbs_query_port_cap_flags
	MaxMsgSz      uint32
	BadPkeyCntr   uint32
	QkeyViolCntr  uint32
	GidTblLen     uint32
	PkeyTblLen    uint16
	LID           uint16
	SmLID         uint16
	State         uint8 // enum ib_port_state
	MaxMTU        uint8 // enum ib_mtu
	ActiveMTU     uint8 // enum ib_mtu
	LMC           uint8
	MaxVLNum      uint8
	SmSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8 // enum ib_port_width
	ActiveSpeed   uint8 // enum ib_port_speed
	PhysState     uint8 // enum ib_port_phys_state
	LinkLayer     uint8 // IB_LINK_LAYER_*
	Flags         uint8 // enum ib_uverbs_query_port_flags
	Reserved      uint8
}

// AllocPD is struct ib_uverbs_alloc_pd (include/uapi/rdma/ib_user_verbs.h).
type AllocPD struct {
	_        structs.HostLayout
	Response uint64
}

// AllocPDResp is struct ib_uverbs_alloc_pd_resp (include/uapi/rdma/ib_user_verbs.h).
type AllocPDResp struct {
	_        structs.HostLayout
	PDHandle uint32
}

// DeallocPD is struct ib_uverbs_dealloc_pd (include/uapi/rdma/ib_user_verbs.h).
type DeallocPD struct {
	_        structs.HostLayout
	PDHandle uint32
}

// OpenXRCD is struct ib_uverbs_open_xrcd (include/uapi/rdma/ib_user_verbs.h).
type OpenXRCD struct {
	_        structs.HostLayout
	Response uint64
	FD       uint32
	OFlags   uint32
}

// OpenXRCDResp is struct ib_uverbs_open_xrcd_resp
// (include/uapi/rdma/ib_user_verbs.h).
type OpenXRCDResp struct {
	_          structs.HostLayout
	XRCDHandle uint32
}

// CloseXRCD is struct ib_uverbs_close_xrcd (include/uapi/rdma/ib_user_verbs.h).
type CloseXRCD struct {
	_          structs.HostLayout
	XRCDHandle uint32
}

// RegMR is struct ib_uverbs_reg_mr (include/uapi/rdma/ib_user_verbs.h).
type RegMR struct {
	_           structs.HostLayout
	Response    uint64
	Start       uint64
	Length      uint64
	HCAVA       uint64
	PDHandle    uint32
	AccessFlags uint32 // enum ib_uverbs_access_flags
}

// RegMRResp is struct ib_uverbs_reg_mr_resp (include/uapi/rdma/ib_user_verbs.h).
type RegMRResp struct {
	_        structs.HostLayout
	MRHandle uint32
	LKey     uint32
	RKey     uint32
}

// ReregMR is struct ib_uverbs_rereg_mr (include/uapi/rdma/ib_user_verbs.h).
type ReregMR struct {
	_           structs.HostLayout
	Response    uint64
	MRHandle    uint32
	Flags       uint32
	Start       uint64
	Length      uint64
	HCAVA       uint64
	PDHandle    uint32
	AccessFlags uint32
}

// ReregMRResp is struct ib_uverbs_rereg_mr_resp (include/uapi/rdma/ib_user_verbs.h).
type ReregMRResp struct {
	_    structs.HostLayout
	LKey uint32
	RKey uint32
}

// DeregMR is struct ib_uverbs_dereg_mr (include/uapi/rdma/ib_user_verbs.h).
type DeregMR struct {
	_        structs.HostLayout
	MRHandle uint32
}

// AllocMW is struct ib_uverbs_alloc_mw (include/uapi/rdma/ib_user_verbs.h).
type AllocMW struct {
	_        structs.HostLayout
	Response uint64
	PDHandle uint32
	MWType   uint8
	Reserved [3]uint8
}

// AllocMWResp is struct ib_uverbs_alloc_mw_resp (include/uapi/rdma/ib_user_verbs.h).
type AllocMWResp struct {
	_        structs.HostLayout
	MWHandle uint32
	RKey     uint32
}

// DeallocMW is struct ib_uverbs_dealloc_mw (include/uapi/rdma/ib_user_verbs.h).
type DeallocMW struct {
	_        structs.HostLayout
	MWHandle uint32
}

// CreateCompChannel is struct ib_uverbs_create_comp_channel
// (include/uapi/rdma/ib_user_verbs.h).
type CreateCompChannel struct {
	_        structs.HostLayout
	Response uint64
}

// CreateCompChannelResp is struct ib_uverbs_create_comp_channel_resp
// (include/uapi/rdma/ib_user_verbs.h).
type CreateCompChannelResp struct {
	_  structs.HostLayout
	FD uint32
}

// CreateCQ is struct ib_uverbs_create_cq (include/uapi/rdma/ib_user_verbs.h).
// CompChannel is the completion channel fd, or -1 for none.
type CreateCQ struct {
	_           structs.HostLayout
	Response    uint64
	UserHandle  uint64
	CQE         uint32
	CompVector  uint32
	CompChannel int32
	Reserved    uint32
}

// enum ib_uverbs_ex_create_cq_flags
const (
	IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION = 1 << 0
	IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN       = 1 << 1
)

// ExCreateCQ is struct ib_uverbs_ex_create_cq (include/uapi/rdma/ib_user_verbs.h).
type ExCreateCQ struct {
	_           structs.HostLayout
	UserHandle  uint64
	CQE         uint32
	CompVector  uint32
	CompChannel int32
	CompMask    uint32
	Flags       uint32 // enum ib_uverbs_ex_create_cq_flags
	Reserved    uint32
}

// CreateCQResp is struct ib_uverbs_create_cq_resp (include/uapi/rdma/ib_user_verbs.h).
type CreateCQResp struct {
	_        structs.HostLayout
	CQHandle uint32
	CQE      uint32
}

// ExCreateCQResp is struct ib_uverbs_ex_create_cq_resp
// (include/uapi/rdma/ib_user_verbs.h).
type ExCreateCQResp struct {
	_              structs.HostLayout
	Base           CreateCQResp
	CompMask       uint32
	ResponseLength uint32
}

// ResizeCQ is struct ib_uverbs_resize_cq (include/uapi/rdma/ib_user_verbs.h).
type ResizeCQ struct {
	_        structs.HostLayout
	Response uint64
	CQHandle uint32
	CQE      uint32
}

// ResizeCQResp is struct ib_uverbs_resize_cq_resp (include/uapi/rdma/ib_user_verbs.h).
type ResizeCQResp struct {
	_        structs.HostLayout
	CQE      uint32
	Reserved uint32
}

// PollCQ is struct ib_uverbs_poll_cq (include/uapi/rdma/ib_user_verbs.h).
type PollCQ struct {
	_        structs.HostLayout
	Response uint64
	CQHandle uint32
	NE       uint32
}

// enum ib_uverbs_wc_opcode
const (
	IB_UVERBS_WC_SEND         = 0
	IB_UVERBS_WC_RDMA_WRITE   = 1
	IB_UVERBS_WC_RDMA_READ    = 2
	IB_UVERBS_WC_COMP_SWAP    = 3
	IB_UVERBS_WC_FETCH_ADD    = 4
	IB_UVERBS_WC_BIND_MW      = 5
	IB_UVERBS_WC_LOCAL_INV    = 6
	IB_UVERBS_WC_TSO          = 7
	IB_UVERBS_WC_FLUSH        = 8 // Linux 6.2
	IB_UVERBS_WC_ATOMIC_WRITE = 9 // Linux 6.2
)

// WC is struct ib_uverbs_wc (include/uapi/rdma/ib_user_verbs.h): a work
// completion, and the first 48 bytes of every rxe CQ ring slot. ImmData is the
// union ex {__be32 imm_data; __u32 invalidate_rkey}, named after its first member;
// as imm_data it holds the immediate in network byte order.
type WC struct {
	_            structs.HostLayout
	WrID         uint64
	Status       uint32 // enum ib_wc_status (IB_WC_SUCCESS, ...)
	Opcode       uint32 // enum ib_wc_opcode (IB_WC_SEND, ..., IB_WC_RECV)
	VendorErr    uint32
	ByteLen      uint32
	ImmData      uint32 // union ex: __be32 imm_data / __u32 invalidate_rkey
	QPNum        uint32
	SrcQP        uint32
	WcFlags      uint32 // enum ib_wc_flags
	PkeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
	PortNum      uint8
	Reserved     uint8
}

// PollCQResp is struct ib_uverbs_poll_cq_resp (include/uapi/rdma/ib_user_verbs.h),
// followed by Count WC records.
type PollCQResp struct {
	_        structs.HostLayout
	Count    uint32
	Reserved uint32
}

// ReqNotifyCQ is struct ib_uverbs_req_notify_cq (include/uapi/rdma/ib_user_verbs.h).
type ReqNotifyCQ struct {
	_             structs.HostLayout
	CQHandle      uint32
	SolicitedOnly uint32
}

// DestroyCQ is struct ib_uverbs_destroy_cq (include/uapi/rdma/ib_user_verbs.h).
type DestroyCQ struct {
	_        structs.HostLayout
	Response uint64
	CQHandle uint32
	Reserved uint32
}

// DestroyCQResp is struct ib_uverbs_destroy_cq_resp
// (include/uapi/rdma/ib_user_verbs.h).
type DestroyCQResp struct {
	_                   structs.HostLayout
	CompEventsReported  uint32
	AsyncEventsReported uint32
}

// GlobalRoute is struct ib_uverbs_global_route (include/uapi/rdma/ib_user_verbs.h).
type GlobalRoute struct {
	_            structs.HostLayout
	DGID         [16]uint8
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	Reserved     uint8
}

// AHAttr is struct ib_uverbs_ah_attr (include/uapi/rdma/ib_user_verbs.h).
type AHAttr struct {
	_           structs.HostLayout
	GRH         GlobalRoute
	DLID        uint16
	SL          uint8
	SrcPathBits uint8
	StaticRate  uint8
	IsGlobal    uint8
	PortNum     uint8
	Reserved    uint8
}

// QPAttr is struct ib_uverbs_qp_attr (include/uapi/rdma/ib_user_verbs.h), used
// by rdma_ucm's INIT_QP_ATTR response.
type QPAttr struct {
	_                structs.HostLayout
	QPAttrMask       uint32
	QPState          uint32
	CurQPState       uint32
	PathMTU          uint32
	PathMigState     uint32
	Qkey             uint32
	RqPSN            uint32
	SqPSN            uint32
	DestQPNum        uint32
	QPAccessFlags    uint32
	AHAttr           AHAttr
	AltAHAttr        AHAttr
	MaxSendWR        uint32
	MaxRecvWR        uint32
	MaxSendSGE       uint32
	MaxRecvSGE       uint32
	MaxInlineData    uint32
	PkeyIndex        uint16
	AltPkeyIndex     uint16
	EnSQDAsyncNotify uint8
	SqDraining       uint8
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRnrTimer      uint8
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RnrRetry         uint8
	AltPortNum       uint8
	AltTimeout       uint8
	Reserved         [5]uint8
}

// CreateQP is struct ib_uverbs_create_qp (include/uapi/rdma/ib_user_verbs.h).
type CreateQP struct {
	_             structs.HostLayout
	Response      uint64
	UserHandle    uint64
	PDHandle      uint32
	SendCQHandle  uint32
	RecvCQHandle  uint32
	SRQHandle     uint32
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
	SqSigAll      uint8
	QPType        uint8 // enum ib_uverbs_qp_type
	IsSRQ         uint8
	Reserved      uint8
}

// enum ib_uverbs_create_qp_mask
const (
	IB_UVERBS_CREATE_QP_MASK_IND_TABLE = 1 << 0
	IB_UVERBS_CREATE_QP_SUP_COMP_MASK  = IB_UVERBS_CREATE_QP_MASK_IND_TABLE
)

// ExCreateQP is struct ib_uverbs_ex_create_qp (include/uapi/rdma/ib_user_verbs.h).
type ExCreateQP struct {
	_               structs.HostLayout
	UserHandle      uint64
	PDHandle        uint32
	SendCQHandle    uint32
	RecvCQHandle    uint32
	SRQHandle       uint32
	MaxSendWR       uint32
	MaxRecvWR       uint32
	MaxSendSGE      uint32
	MaxRecvSGE      uint32
	MaxInlineData   uint32
	SqSigAll        uint8
	QPType          uint8
	IsSRQ           uint8
	Reserved        uint8
	CompMask        uint32
	CreateFlags     uint32
	RWQIndTblHandle uint32
	SourceQPN       uint32
}

// OpenQP is struct ib_uverbs_open_qp (include/uapi/rdma/ib_user_verbs.h).
type OpenQP struct {
	_          structs.HostLayout
	Response   uint64
	UserHandle uint64
	PDHandle   uint32
	QPN        uint32
	QPType     uint8
	Reserved   [7]uint8
}

// CreateQPResp is struct ib_uverbs_create_qp_resp
// (include/uapi/rdma/ib_user_verbs.h), also the OPEN_QP response.
type CreateQPResp struct {
	_             structs.HostLayout
	QPHandle      uint32
	QPN           uint32
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
	Reserved      uint32
}

// ExCreateQPResp is struct ib_uverbs_ex_create_qp_resp
// (include/uapi/rdma/ib_user_verbs.h).
type ExCreateQPResp struct {
	_              structs.HostLayout
	Base           CreateQPResp
	CompMask       uint32
	ResponseLength uint32
}

// QPDest is struct ib_uverbs_qp_dest (include/uapi/rdma/ib_user_verbs.h): the
// address vector inside MODIFY_QP and the QUERY_QP response.
type QPDest struct {
	_            structs.HostLayout
	DGID         [16]uint8
	FlowLabel    uint32
	DLID         uint16
	Reserved     uint16
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     uint8
	PortNum      uint8
}

// QueryQP is struct ib_uverbs_query_qp (include/uapi/rdma/ib_user_verbs.h).
type QueryQP struct {
	_        structs.HostLayout
	Response uint64
	QPHandle uint32
	AttrMask uint32
}

// QueryQPResp is struct ib_uverbs_query_qp_resp (include/uapi/rdma/ib_user_verbs.h).
type QueryQPResp struct {
	_               structs.HostLayout
	Dest            QPDest
	AltDest         QPDest
	MaxSendWR       uint32
	MaxRecvWR       uint32
	MaxSendSGE      uint32
	MaxRecvSGE      uint32
	MaxInlineData   uint32
	Qkey            uint32
	RqPSN           uint32
	SqPSN           uint32
	DestQPNum       uint32
	QPAccessFlags   uint32
	PkeyIndex       uint16
	AltPkeyIndex    uint16
	QPState         uint8
	CurQPState      uint8
	PathMTU         uint8
	PathMigState    uint8
	SqDraining      uint8
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRnrTimer     uint8
	PortNum         uint8
	Timeout         uint8
	RetryCnt        uint8
	RnrRetry        uint8
	AltPortNum      uint8
	AltTimeout      uint8
	SqSigAll        uint8
	Reserved        [5]uint8
}

// ModifyQP is struct ib_uverbs_modify_qp (include/uapi/rdma/ib_user_verbs.h).
type ModifyQP struct {
	_                structs.HostLayout
	Dest             QPDest
	AltDest          QPDest
	QPHandle         uint32
	AttrMask         uint32 // enum ib_qp_attr_mask
	Qkey             uint32
	RqPSN            uint32
	SqPSN            uint32
	DestQPNum        uint32
	QPAccessFlags    uint32
	PkeyIndex        uint16
	AltPkeyIndex     uint16
	QPState          uint8
	CurQPState       uint8
	PathMTU          uint8
	PathMigState     uint8
	EnSQDAsyncNotify uint8
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRnrTimer      uint8
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RnrRetry         uint8
	AltPortNum       uint8
	AltTimeout       uint8
	Reserved         [2]uint8
}

// ExModifyQP is struct ib_uverbs_ex_modify_qp (include/uapi/rdma/ib_user_verbs.h).
type ExModifyQP struct {
	_         structs.HostLayout
	Base      ModifyQP
	RateLimit uint32
	Reserved  uint32
}

// ExModifyQPResp is struct ib_uverbs_ex_modify_qp_resp
// (include/uapi/rdma/ib_user_verbs.h).
type ExModifyQPResp struct {
	_              structs.HostLayout
	CompMask       uint32
	ResponseLength uint32
}

// DestroyQP is struct ib_uverbs_destroy_qp (include/uapi/rdma/ib_user_verbs.h).
type DestroyQP struct {
	_        structs.HostLayout
	Response uint64
	QPHandle uint32
	Reserved uint32
}

// DestroyQPResp is struct ib_uverbs_destroy_qp_resp
// (include/uapi/rdma/ib_user_verbs.h).
type DestroyQPResp struct {
	_              structs.HostLayout
	EventsReported uint32
}

// SGE is struct ib_uverbs_sge (include/uapi/rdma/ib_user_verbs.h), laid out
// like struct ib_sge and struct rxe_sge.
type SGE struct {
	_      structs.HostLayout
	Addr   uint64
	Length uint32
	LKey   uint32
}

// enum ib_uverbs_wr_opcode
const (
	IB_UVERBS_WR_RDMA_WRITE                  = 0
	IB_UVERBS_WR_RDMA_WRITE_WITH_IMM         = 1
	IB_UVERBS_WR_SEND                        = 2
	IB_UVERBS_WR_SEND_WITH_IMM               = 3
	IB_UVERBS_WR_RDMA_READ                   = 4
	IB_UVERBS_WR_ATOMIC_CMP_AND_SWP          = 5
	IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD        = 6
	IB_UVERBS_WR_LOCAL_INV                   = 7
	IB_UVERBS_WR_BIND_MW                     = 8
	IB_UVERBS_WR_SEND_WITH_INV               = 9
	IB_UVERBS_WR_TSO                         = 10
	IB_UVERBS_WR_RDMA_READ_WITH_INV          = 11
	IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP   = 12
	IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD = 13
	IB_UVERBS_WR_FLUSH                       = 14 // Linux 6.2
	IB_UVERBS_WR_ATOMIC_WRITE                = 15 // Linux 6.2
)

// SendWR is struct ib_uverbs_send_wr (include/uapi/rdma/ib_user_verbs.h).
// ImmData is the union ex (imm_data/invalidate_rkey); WR is the 32-byte union
// wr {rdma, atomic, ud}, whose members are SendWRRdma, SendWRAtomic, SendWRUD.
type SendWR struct {
	_         structs.HostLayout
	WrID      uint64
	NumSGE    uint32
	Opcode    uint32 // enum ib_uverbs_wr_opcode
	SendFlags uint32
	ImmData   uint32 // union ex: __be32 imm_data / __u32 invalidate_rkey
	WR        [32]uint8
}

// SendWRRdma is the rdma member of union wr in struct ib_uverbs_send_wr.
type SendWRRdma struct {
	_          structs.HostLayout
	RemoteAddr uint64
	RKey       uint32
	Reserved   uint32
}

// SendWRAtomic is the atomic member of union wr in struct ib_uverbs_send_wr.
type SendWRAtomic struct {
	_          structs.HostLayout
	RemoteAddr uint64
	CompareAdd uint64
	Swap       uint64
	RKey       uint32
	Reserved   uint32
}

// SendWRUD is the ud member of union wr in struct ib_uverbs_send_wr.
type SendWRUD struct {
	_          structs.HostLayout
	AH         uint32
	RemoteQPN  uint32
	RemoteQkey uint32
	Reserved   uint32
}

// PostSend is struct ib_uverbs_post_send (include/uapi/rdma/ib_user_verbs.h),
// followed by WrCount SendWR records of WqeSize bytes and SgeCount SGEs. With
// WrCount 0 it is the doorbell of providers that own their send ring (rxe,
// siw); WqeSize must still be at least the size of SendWR on recent kernels.
type PostSend struct {
	_        structs.HostLayout
	Response uint64
	QPHandle uint32
	WrCount  uint32
	SgeCount uint32
	WqeSize  uint32
}

// PostSendResp is struct ib_uverbs_post_send_resp (include/uapi/rdma/ib_user_verbs.h).
type PostSendResp struct {
	_     structs.HostLayout
	BadWR uint32
}

// RecvWR is struct ib_uverbs_recv_wr (include/uapi/rdma/ib_user_verbs.h).
type RecvWR struct {
	_        structs.HostLayout
	WrID     uint64
	NumSGE   uint32
	Reserved uint32
}

// PostRecv is struct ib_uverbs_post_recv (include/uapi/rdma/ib_user_verbs.h).
type PostRecv struct {
	_        structs.HostLayout
	Response uint64
	QPHandle uint32
	WrCount  uint32
	SgeCount uint32
	WqeSize  uint32
}

// PostRecvResp is struct ib_uverbs_post_recv_resp (include/uapi/rdma/ib_user_verbs.h).
type PostRecvResp struct {
	_     structs.HostLayout
	BadWR uint32
}

// PostSRQRecv is struct ib_uverbs_post_srq_recv (include/uapi/rdma/ib_user_verbs.h).
type PostSRQRecv struct {
	_         structs.HostLayout
	Response  uint64
	SRQHandle uint32
	WrCount   uint32
	SgeCount  uint32
	WqeSize   uint32
}

// PostSRQRecvResp is struct ib_uverbs_post_srq_recv_resp
// (include/uapi/rdma/ib_user_verbs.h).
type PostSRQRecvResp struct {
	_     structs.HostLayout
	BadWR uint32
}

// CreateAH is struct ib_uverbs_create_ah (include/uapi/rdma/ib_user_verbs.h).
type CreateAH struct {
	_          structs.HostLayout
	Response   uint64
	UserHandle uint64
	PDHandle   uint32
	Reserved   uint32
	Attr       AHAttr
}

// CreateAHResp is struct ib_uverbs_create_ah_resp (include/uapi/rdma/ib_user_verbs.h).
type CreateAHResp struct {
	_        structs.HostLayout
	AHHandle uint32
}

// DestroyAH is struct ib_uverbs_destroy_ah (include/uapi/rdma/ib_user_verbs.h).
type DestroyAH struct {
	_        structs.HostLayout
	AHHandle uint32
}

// AttachMcast is struct ib_uverbs_attach_mcast (include/uapi/rdma/ib_user_verbs.h).
type AttachMcast struct {
	_        structs.HostLayout
	GID      [16]uint8
	QPHandle uint32
	MLID     uint16
	Reserved uint16
}

// DetachMcast is struct ib_uverbs_detach_mcast (include/uapi/rdma/ib_user_verbs.h).
type DetachMcast struct {
	_        structs.HostLayout
	GID      [16]uint8
	QPHandle uint32
	MLID     uint16
	Reserved uint16
}

// CreateSRQ is struct ib_uverbs_create_srq (include/uapi/rdma/ib_user_verbs.h).
type CreateSRQ struct {
	_          structs.HostLayout
	Response   uint64
	UserHandle uint64
	PDHandle   uint32
	MaxWR      uint32
	MaxSGE     uint32
	SRQLimit   uint32
}

// CreateXSRQ is struct ib_uverbs_create_xsrq (include/uapi/rdma/ib_user_verbs.h).
type CreateXSRQ struct {
	_          structs.HostLayout
	Response   uint64
	UserHandle uint64
	SRQType    uint32
	PDHandle   uint32
	MaxWR      uint32
	MaxSGE     uint32
	SRQLimit   uint32
	MaxNumTags uint32
	XRCDHandle uint32
	CQHandle   uint32
}

// CreateSRQResp is struct ib_uverbs_create_srq_resp
// (include/uapi/rdma/ib_user_verbs.h).
type CreateSRQResp struct {
	_         structs.HostLayout
	SRQHandle uint32
	MaxWR     uint32
	MaxSGE    uint32
	SRQN      uint32
}

// ModifySRQ is struct ib_uverbs_modify_srq (include/uapi/rdma/ib_user_verbs.h).
// It has no response pointer; rxe appends rxe_modify_srq_cmd.
type ModifySRQ struct {
	_         structs.HostLayout
	SRQHandle uint32
	AttrMask  uint32 // enum ib_srq_attr_mask
	MaxWR     uint32
	SRQLimit  uint32
}

// QuerySRQ is struct ib_uverbs_query_srq (include/uapi/rdma/ib_user_verbs.h).
type QuerySRQ struct {
	_         structs.HostLayout
	Response  uint64
	SRQHandle uint32
	Reserved  uint32
}

// QuerySRQResp is struct ib_uverbs_query_srq_resp (include/uapi/rdma/ib_user_verbs.h).
type QuerySRQResp struct {
	_        structs.HostLayout
	MaxWR    uint32
	MaxSGE   uint32
	SRQLimit uint32
	Reserved uint32
}

// DestroySRQ is struct ib_uverbs_destroy_srq (include/uapi/rdma/ib_user_verbs.h).
type DestroySRQ struct {
	_         structs.HostLayout
	Response  uint64
	SRQHandle uint32
	Reserved  uint32
}

// DestroySRQResp is struct ib_uverbs_destroy_srq_resp
// (include/uapi/rdma/ib_user_verbs.h).
type DestroySRQResp struct {
	_              structs.HostLayout
	EventsReported uint32
}

// ExCreateWQ is struct ib_uverbs_ex_create_wq (include/uapi/rdma/ib_user_verbs.h).
type ExCreateWQ struct {
	_           structs.HostLayout
	CompMask    uint32
	WQType      uint32
	UserHandle  uint64
	PDHandle    uint32
	CQHandle    uint32
	MaxWR       uint32
	MaxSGE      uint32
	CreateFlags uint32
	Reserved    uint32
}

// ExCreateWQResp is struct ib_uverbs_ex_create_wq_resp
// (include/uapi/rdma/ib_user_verbs.h).
type ExCreateWQResp struct {
	_              structs.HostLayout
	CompMask       uint32
	ResponseLength uint32
	WQHandle       uint32
	MaxWR          uint32
	MaxSGE         uint32
	WQN            uint32
}

// ExDestroyWQ is struct ib_uverbs_ex_destroy_wq (include/uapi/rdma/ib_user_verbs.h).
type ExDestroyWQ struct {
	_        structs.HostLayout
	CompMask uint32
	WQHandle uint32
}

// ExDestroyWQResp is struct ib_uverbs_ex_destroy_wq_resp
// (include/uapi/rdma/ib_user_verbs.h).
type ExDestroyWQResp struct {
	_              structs.HostLayout
	CompMask       uint32
	ResponseLength uint32
	EventsReported uint32
	Reserved       uint32
}

// ExModifyWQ is struct ib_uverbs_ex_modify_wq (include/uapi/rdma/ib_user_verbs.h).
type ExModifyWQ struct {
	_           structs.HostLayout
	AttrMask    uint32
	WQHandle    uint32
	WQState     uint32
	CurrWQState uint32
	Flags       uint32
	FlagsMask   uint32
}

// IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE bounds ExCreateRWQIndTable.LogIndTblSize.
const IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE = 0x0d

// ExCreateRWQIndTable is struct ib_uverbs_ex_create_rwq_ind_table
// (include/uapi/rdma/ib_user_verbs.h), followed by the WQ handles.
type ExCreateRWQIndTable struct {
	_             structs.HostLayout
	CompMask      uint32
	LogIndTblSize uint32
}

// ExCreateRWQIndTableResp is struct ib_uverbs_ex_create_rwq_ind_table_resp
// (include/uapi/rdma/ib_user_verbs.h).
type ExCreateRWQIndTableResp struct {
	_              structs.HostLayout
	CompMask       uint32
	ResponseLength uint32
	IndTblHandle   uint32
	IndTblNum      uint32
}

// ExDestroyRWQIndTable is struct ib_uverbs_ex_destroy_rwq_ind_table
// (include/uapi/rdma/ib_user_verbs.h).
type ExDestroyRWQIndTable struct {
	_            structs.HostLayout
	CompMask     uint32
	IndTblHandle uint32
}

// CQModeration is struct ib_uverbs_cq_moderation (include/uapi/rdma/ib_user_verbs.h).
type CQModeration struct {
	_        structs.HostLayout
	CQCount  uint16
	CQPeriod uint16
}

// ExModifyCQ is struct ib_uverbs_ex_modify_cq (include/uapi/rdma/ib_user_verbs.h).
type ExModifyCQ struct {
	_        structs.HostLayout
	CQHandle uint32
	AttrMask uint32
	Attr     CQModeration
	Reserved uint32
}

// ClockInfo is struct ib_uverbs_clock_info (include/uapi/rdma/ib_user_verbs.h,
// newer than Linux 6.12): the timecounter page some drivers let user space map.
type ClockInfo struct {
	_              structs.HostLayout
	Sign           uint32
	Resv           uint32
	Nsec           uint64
	Cycles         uint64
	Frac           uint64
	Mult           uint32
	Shift          uint32
	Mask           uint64
	OverflowPeriod uint64
}

// IB_DEVICE_NAME_MAX is the longest device name the kernel accepts.
const IB_DEVICE_NAME_MAX = 64

// enum ib_placement_type (Linux 6.2)
const (
	IB_FLUSH_GLOBAL     = 1 << 0
	IB_FLUSH_PERSISTENT = 1 << 1
)

// enum ib_selectivity_level (Linux 6.2)
const (
	IB_FLUSH_RANGE = 0
	IB_FLUSH_MR    = 1
)

// enum ib_uverbs_odp_general_cap_bits
const (
	IB_UVERBS_ODP_SUPPORT          = 1 << 0
	IB_UVERBS_ODP_SUPPORT_IMPLICIT = 1 << 1
)

// enum ib_uverbs_odp_transport_cap_bits
const (
	IB_UVERBS_ODP_SUPPORT_SEND         = 1 << 0
	IB_UVERBS_ODP_SUPPORT_RECV         = 1 << 1
	IB_UVERBS_ODP_SUPPORT_WRITE        = 1 << 2
	IB_UVERBS_ODP_SUPPORT_READ         = 1 << 3
	IB_UVERBS_ODP_SUPPORT_ATOMIC       = 1 << 4
	IB_UVERBS_ODP_SUPPORT_SRQ_RECV     = 1 << 5
	IB_UVERBS_ODP_SUPPORT_FLUSH        = 1 << 6
	IB_UVERBS_ODP_SUPPORT_ATOMIC_WRITE = 1 << 7
)

// enum ib_uverbs_device_cap_flags (a 64-bit set: the low half is
// QueryDeviceResp.DeviceCapFlags, all of it ExQueryDeviceResp.DeviceCapFlagsEx).
const (
	IB_UVERBS_DEVICE_RESIZE_MAX_WR         = 1 << 0
	IB_UVERBS_DEVICE_BAD_PKEY_CNTR         = 1 << 1
	IB_UVERBS_DEVICE_BAD_QKEY_CNTR         = 1 << 2
	IB_UVERBS_DEVICE_RAW_MULTI             = 1 << 3
	IB_UVERBS_DEVICE_AUTO_PATH_MIG         = 1 << 4
	IB_UVERBS_DEVICE_CHANGE_PHY_PORT       = 1 << 5
	IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE    = 1 << 6
	IB_UVERBS_DEVICE_CURR_QP_STATE_MOD     = 1 << 7
	IB_UVERBS_DEVICE_SHUTDOWN_PORT         = 1 << 8
	IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT     = 1 << 10
	IB_UVERBS_DEVICE_SYS_IMAGE_GUID        = 1 << 11
	IB_UVERBS_DEVICE_RC_RNR_NAK_GEN        = 1 << 12
	IB_UVERBS_DEVICE_SRQ_RESIZE            = 1 << 13
	IB_UVERBS_DEVICE_N_NOTIFY_CQ           = 1 << 14
	IB_UVERBS_DEVICE_MEM_WINDOW            = 1 << 17
	IB_UVERBS_DEVICE_UD_IP_CSUM            = 1 << 18
	IB_UVERBS_DEVICE_XRC                   = 1 << 20
	IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS    = 1 << 21
	IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A    = 1 << 23
	IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B    = 1 << 24
	IB_UVERBS_DEVICE_RC_IP_CSUM            = 1 << 25
	IB_UVERBS_DEVICE_RAW_IP_CSUM           = 1 << 26
	IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING = 1 << 29
	IB_UVERBS_DEVICE_RAW_SCATTER_FCS       = 1 << 34
	IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING = 1 << 36
	IB_UVERBS_DEVICE_FLUSH_GLOBAL          = 1 << 38 // Linux 6.2
	IB_UVERBS_DEVICE_FLUSH_PERSISTENT      = 1 << 39 // Linux 6.2
	IB_UVERBS_DEVICE_ATOMIC_WRITE          = 1 << 40 // Linux 6.2
	IB_UVERBS_DEVICE_CC_DMA_BOUNCE         = 1 << 41
)

// enum ib_uverbs_raw_packet_caps
const (
	IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING = 1 << 0
	IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS     = 1 << 1
	IB_UVERBS_RAW_PACKET_CAP_IP_CSUM         = 1 << 2
	IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP      = 1 << 3
)

// ---------------------------------------------------------------------------
// Values from include/rdma/ib_verbs.h that cross the uverbs ABI. They were read
// from the BTF of Linux 6.1 and 6.12 (which agree except where marked) and
// match libibverbs' IBV_* spellings of the same numbers.

// enum ib_wc_status: WC.Status.
const (
	IB_WC_SUCCESS            = 0
	IB_WC_LOC_LEN_ERR        = 1
	IB_WC_LOC_QP_OP_ERR      = 2
	IB_WC_LOC_EEC_OP_ERR     = 3
	IB_WC_LOC_PROT_ERR       = 4
	IB_WC_WR_FLUSH_ERR       = 5
	IB_WC_MW_BIND_ERR        = 6
	IB_WC_BAD_RESP_ERR       = 7
	IB_WC_LOC_ACCESS_ERR     = 8
	IB_WC_REM_INV_REQ_ERR    = 9
	IB_WC_REM_ACCESS_ERR     = 10
	IB_WC_REM_OP_ERR         = 11
	IB_WC_RETRY_EXC_ERR      = 12
	IB_WC_RNR_RETRY_EXC_ERR  = 13
	IB_WC_LOC_RDD_VIOL_ERR   = 14
	IB_WC_REM_INV_RD_REQ_ERR = 15
	IB_WC_REM_ABORT_ERR      = 16
	IB_WC_INV_EECN_ERR       = 17
	IB_WC_INV_EEC_STATE_ERR  = 18
	IB_WC_FATAL_ERR          = 19
	IB_WC_RESP_TIMEOUT_ERR   = 20
	IB_WC_GENERAL_ERR        = 21
)

// enum ib_wc_opcode: WC.Opcode. A receive completion has IB_WC_RECV set.
// Linux 6.1 numbers IB_WC_REG_MR 8 and has no FLUSH/ATOMIC_WRITE; user space
// never sees REG_MR and the masked atomics, so only the 6.2+ numbers are given.
const (
	IB_WC_SEND               = IB_UVERBS_WC_SEND
	IB_WC_RDMA_WRITE         = IB_UVERBS_WC_RDMA_WRITE
	IB_WC_RDMA_READ          = IB_UVERBS_WC_RDMA_READ
	IB_WC_COMP_SWAP          = IB_UVERBS_WC_COMP_SWAP
	IB_WC_FETCH_ADD          = IB_UVERBS_WC_FETCH_ADD
	IB_WC_BIND_MW            = IB_UVERBS_WC_BIND_MW
	IB_WC_LOCAL_INV          = IB_UVERBS_WC_LOCAL_INV
	IB_WC_LSO                = IB_UVERBS_WC_TSO
	IB_WC_FLUSH              = IB_UVERBS_WC_FLUSH        // Linux 6.2
	IB_WC_ATOMIC_WRITE       = IB_UVERBS_WC_ATOMIC_WRITE // Linux 6.2
	IB_WC_RECV               = 1 << 7
	IB_WC_RECV_RDMA_WITH_IMM = IB_WC_RECV + 1
)

// enum ib_wc_flags: WC.WcFlags as the kernel writes it. (libibverbs swaps the
// numbers of WITH_INV and IP_CSUM_OK; rxe sets only GRH and WITH_IMM.)
const (
	IB_WC_GRH                   = 1 << 0
	IB_WC_WITH_IMM              = 1 << 1
	IB_WC_WITH_INVALIDATE       = 1 << 2
	IB_WC_IP_CSUM_OK            = 1 << 3
	IB_WC_WITH_SMAC             = 1 << 4
	IB_WC_WITH_VLAN             = 1 << 5
	IB_WC_WITH_NETWORK_HDR_TYPE = 1 << 6
)

// enum ib_wr_opcode as rxe reads it from a send WQE (same numbers as
// enum ib_uverbs_wr_opcode for everything user space may post).
const (
	IB_WR_RDMA_WRITE                  = IB_UVERBS_WR_RDMA_WRITE
	IB_WR_RDMA_WRITE_WITH_IMM         = IB_UVERBS_WR_RDMA_WRITE_WITH_IMM
	IB_WR_SEND                        = IB_UVERBS_WR_SEND
	IB_WR_SEND_WITH_IMM               = IB_UVERBS_WR_SEND_WITH_IMM
	IB_WR_RDMA_READ                   = IB_UVERBS_WR_RDMA_READ
	IB_WR_ATOMIC_CMP_AND_SWP          = IB_UVERBS_WR_ATOMIC_CMP_AND_SWP
	IB_WR_ATOMIC_FETCH_AND_ADD        = IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD
	IB_WR_LOCAL_INV                   = IB_UVERBS_WR_LOCAL_INV
	IB_WR_BIND_MW                     = IB_UVERBS_WR_BIND_MW
	IB_WR_SEND_WITH_INV               = IB_UVERBS_WR_SEND_WITH_INV
	IB_WR_LSO                         = IB_UVERBS_WR_TSO
	IB_WR_RDMA_READ_WITH_INV          = IB_UVERBS_WR_RDMA_READ_WITH_INV
	IB_WR_MASKED_ATOMIC_CMP_AND_SWP   = IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP
	IB_WR_MASKED_ATOMIC_FETCH_AND_ADD = IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD
	IB_WR_FLUSH                       = IB_UVERBS_WR_FLUSH        // Linux 6.2
	IB_WR_ATOMIC_WRITE                = IB_UVERBS_WR_ATOMIC_WRITE // Linux 6.2
)

// enum ib_send_flags: send_flags of a send WQE.
const (
	IB_SEND_FENCE     = 1 << 0
	IB_SEND_SIGNALED  = 1 << 1
	IB_SEND_SOLICITED = 1 << 2
	IB_SEND_INLINE    = 1 << 3
	IB_SEND_IP_CSUM   = 1 << 4
)

// enum ib_qp_state
const (
	IB_QPS_RESET = 0
	IB_QPS_INIT  = 1
	IB_QPS_RTR   = 2
	IB_QPS_RTS   = 3
	IB_QPS_SQD   = 4
	IB_QPS_SQE   = 5
	IB_QPS_ERR   = 6
)

// enum ib_qp_attr_mask: ModifyQP.AttrMask and QueryQP.AttrMask.
const (
	IB_QP_STATE               = 1 << 0
	IB_QP_CUR_STATE           = 1 << 1
	IB_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2
	IB_QP_ACCESS_FLAGS        = 1 << 3
	IB_QP_PKEY_INDEX          = 1 << 4
	IB_QP_PORT                = 1 << 5
	IB_QP_QKEY                = 1 << 6
	IB_QP_AV                  = 1 << 7
	IB_QP_PATH_MTU            = 1 << 8
	IB_QP_TIMEOUT             = 1 << 9
	IB_QP_RETRY_CNT           = 1 << 10
	IB_QP_RNR_RETRY           = 1 << 11
	IB_QP_RQ_PSN              = 1 << 12
	IB_QP_MAX_QP_RD_ATOMIC    = 1 << 13
	IB_QP_ALT_PATH            = 1 << 14
	IB_QP_MIN_RNR_TIMER       = 1 << 15
	IB_QP_SQ_PSN              = 1 << 16
	IB_QP_MAX_DEST_RD_ATOMIC  = 1 << 17
	IB_QP_PATH_MIG_STATE      = 1 << 18
	IB_QP_CAP                 = 1 << 19
	IB_QP_DEST_QPN            = 1 << 20
	IB_QP_RESERVED1           = 1 << 21
	IB_QP_RESERVED2           = 1 << 22
	IB_QP_RESERVED3           = 1 << 23
	IB_QP_RESERVED4           = 1 << 24
	IB_QP_RATE_LIMIT          = 1 << 25
)

// enum ib_qp_type (the kernel's; ib_uverbs_qp_type gives the user-visible subset).
const (
	IB_QPT_SMI           = 0
	IB_QPT_GSI           = 1
	IB_QPT_RC            = 2
	IB_QPT_UC            = 3
	IB_QPT_UD            = 4
	IB_QPT_RAW_IPV6      = 5
	IB_QPT_RAW_ETHERTYPE = 6
	IB_QPT_RAW_PACKET    = 8
	IB_QPT_XRC_INI       = 9
	IB_QPT_XRC_TGT       = 10
	IB_QPT_DRIVER        = 0xff
)

// enum ib_mig_state
const (
	IB_MIG_MIGRATED = 0
	IB_MIG_REARM    = 1
	IB_MIG_ARMED    = 2
)

// enum ib_mtu
const (
	IB_MTU_256  = 1
	IB_MTU_512  = 2
	IB_MTU_1024 = 3
	IB_MTU_2048 = 4
	IB_MTU_4096 = 5
)

// enum ib_port_state
const (
	IB_PORT_NOP          = 0
	IB_PORT_DOWN         = 1
	IB_PORT_INIT         = 2
	IB_PORT_ARMED        = 3
	IB_PORT_ACTIVE       = 4
	IB_PORT_ACTIVE_DEFER = 5
)

// enum ib_port_phys_state
const (
	IB_PORT_PHYS_STATE_SLEEP                       = 1
	IB_PORT_PHYS_STATE_POLLING                     = 2
	IB_PORT_PHYS_STATE_DISABLED                    = 3
	IB_PORT_PHYS_STATE_PORT_CONFIGURATION_TRAINING = 4
	IB_PORT_PHYS_STATE_LINK_UP                     = 5
	IB_PORT_PHYS_STATE_LINK_ERROR_RECOVERY         = 6
	IB_PORT_PHYS_STATE_PHY_TEST                    = 7
)

// enum rdma_link_layer: QueryPortResp.LinkLayer.
const (
	IB_LINK_LAYER_UNSPECIFIED = 0
	IB_LINK_LAYER_INFINIBAND  = 1
	IB_LINK_LAYER_ETHERNET    = 2
)

// enum ib_port_width: QueryPortResp.ActiveWidth.
const (
	IB_WIDTH_1X  = 1
	IB_WIDTH_2X  = 16
	IB_WIDTH_4X  = 2
	IB_WIDTH_8X  = 4
	IB_WIDTH_12X = 8
)

// enum ib_port_speed: QueryPortResp.ActiveSpeed (per lane).
const (
	IB_SPEED_SDR   = 1
	IB_SPEED_DDR   = 2
	IB_SPEED_QDR   = 4
	IB_SPEED_FDR10 = 8
	IB_SPEED_FDR   = 16
	IB_SPEED_EDR   = 32
	IB_SPEED_HDR   = 64
	IB_SPEED_NDR   = 128
	IB_SPEED_XDR   = 256 // not in Linux 6.1
)

// enum ib_event_type: AsyncEventDesc.EventType.
const (
	IB_EVENT_CQ_ERR              = 0
	IB_EVENT_QP_FATAL            = 1
	IB_EVENT_QP_REQ_ERR          = 2
	IB_EVENT_QP_ACCESS_ERR       = 3
	IB_EVENT_COMM_EST            = 4
	IB_EVENT_SQ_DRAINED          = 5
	IB_EVENT_PATH_MIG            = 6
	IB_EVENT_PATH_MIG_ERR        = 7
	IB_EVENT_DEVICE_FATAL        = 8
	IB_EVENT_PORT_ACTIVE         = 9
	IB_EVENT_PORT_ERR            = 10
	IB_EVENT_LID_CHANGE          = 11
	IB_EVENT_PKEY_CHANGE         = 12
	IB_EVENT_SM_CHANGE           = 13
	IB_EVENT_SRQ_ERR             = 14
	IB_EVENT_SRQ_LIMIT_REACHED   = 15
	IB_EVENT_QP_LAST_WQE_REACHED = 16
	IB_EVENT_CLIENT_REREGISTER   = 17
	IB_EVENT_GID_CHANGE          = 18
	IB_EVENT_WQ_FATAL            = 19
)

// enum ib_atomic_cap: QueryDeviceResp.AtomicCap.
const (
	IB_ATOMIC_NONE = 0
	IB_ATOMIC_HCA  = 1
	IB_ATOMIC_GLOB = 2
)

// enum ib_srq_attr_mask: ModifySRQ.AttrMask.
const (
	IB_SRQ_MAX_WR = 1 << 0
	IB_SRQ_LIMIT  = 1 << 1
)

// enum ib_access_flags (same numbers as enum ib_uverbs_access_flags).
const (
	IB_ACCESS_LOCAL_WRITE      = 1 << 0
	IB_ACCESS_REMOTE_WRITE     = 1 << 1
	IB_ACCESS_REMOTE_READ      = 1 << 2
	IB_ACCESS_REMOTE_ATOMIC    = 1 << 3
	IB_ACCESS_MW_BIND          = 1 << 4
	IB_ZERO_BASED              = 1 << 5
	IB_ACCESS_ON_DEMAND        = 1 << 6
	IB_ACCESS_HUGETLB          = 1 << 7
	IB_ACCESS_FLUSH_GLOBAL     = 1 << 8 // Linux 6.2
	IB_ACCESS_FLUSH_PERSISTENT = 1 << 9 // Linux 6.2
	IB_ACCESS_RELAXED_ORDERING = 1 << 20
)

// enum ib_cq_notify_flags; REQ_NOTIFY_CQ passes only SolicitedOnly 0 or 1.
const (
	IB_CQ_SOLICITED            = 1 << 0
	IB_CQ_NEXT_COMP            = 1 << 1
	IB_CQ_SOLICITED_MASK       = IB_CQ_SOLICITED | IB_CQ_NEXT_COMP
	IB_CQ_REPORT_MISSED_EVENTS = 1 << 2
)
