// Copyright 2026 The rdmago Authors.

package abi

import "structs"

// This file is include/uapi/rdma/rdma_user_rxe.h: what the Soft-RoCE (rxe)
// driver shares with user space — the driver parts of the create responses
// (mmap cookies), and the layout of the rings user space maps: the queue header,
// send and receive WQEs, CQEs (which are WC records). Ported by hand from
// rdma-core's kernel-headers (commit 691953d, 2026-08) and checked against the
// BTF of Linux 6.1 and 6.12, whose rxe_send_wqe, rxe_recv_wqe and rxe_queue_buf
// layouts are identical.
//
// C unions are ported as byte arrays named after the union, with one Go struct
// per union member (RxeWR*) to overlay on them.

// Network types of RxeAV.NetworkType.
const (
	RXE_NETWORK_TYPE_IPV4 = 1
	RXE_NETWORK_TYPE_IPV6 = 2
)

// RxeGlobalRoute is struct rxe_global_route (include/uapi/rdma/rdma_user_rxe.h).
// DGID is union rxe_gid (raw[16] / {subnet_prefix, interface_id}).
type RxeGlobalRoute struct {
	_            structs.HostLayout
	DGID         [16]uint8
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	_            [1]uint8
}

// RxeAV is struct rxe_av (include/uapi/rdma/rdma_user_rxe.h): the address
// vector old kernels (before ah_num, Linux 5.10) took inside UD send WQEs.
// SGIDAddr and DGIDAddr are union {sockaddr_in; sockaddr_in6}.
type RxeAV struct {
	_           structs.HostLayout
	PortNum     uint8
	NetworkType uint8 // RXE_NETWORK_TYPE_*
	DMAC        [6]uint8
	GRH         RxeGlobalRoute
	SGIDAddr    [28]uint8
	DGIDAddr    [28]uint8
}

// RxeSendWR is struct rxe_send_wr (include/uapi/rdma/rdma_user_rxe.h): the
// first 144 bytes of a send WQE. ImmData is the union ex (imm_data in network
// byte order / invalidate_rkey); WR is the 120-byte union wr, read through
// RxeWRFlush, RxeWRRdma, RxeWRAtomic, RxeWRUD or RxeWRMW.
type RxeSendWR struct {
	_         structs.HostLayout
	WrID      uint64
	Reserved  uint32
	Opcode    uint32 // enum ib_wr_opcode
	SendFlags uint32 // enum ib_send_flags
	ImmData   uint32 // union ex
	WR        [120]uint8
}

// RxeWRFlush is the flush member of union wr in struct rxe_send_wr (Linux 6.2).
type RxeWRFlush struct {
	_          structs.HostLayout
	RemoteAddr uint64
	Length     uint32
	RKey       uint32
	Type       uint8 // enum ib_placement_type
	Level      uint8 // enum ib_selectivity_level
	_          [6]uint8
}

// RxeWRRdma is the rdma member of union wr in struct rxe_send_wr (RDMA WRITE,
// RDMA READ, and ATOMIC_WRITE on Linux 6.2+).
type RxeWRRdma struct {
	_          structs.HostLayout
	RemoteAddr uint64
	RKey       uint32
	Reserved   uint32
}

// RxeWRAtomic is the atomic member of union wr in struct rxe_send_wr.
type RxeWRAtomic struct {
	_          structs.HostLayout
	RemoteAddr uint64
	CompareAdd uint64
	Swap       uint64
	RKey       uint32
	Reserved   uint32
}

// RxeWRUD is the ud member of union wr in struct rxe_send_wr. Kernels since
// Linux 5.10 return an AH number from CREATE_AH and read AHNum; AV is for older
// ones.
type RxeWRUD struct {
	_          structs.HostLayout
	RemoteQPN  uint32
	RemoteQkey uint32
	PkeyIndex  uint16
	Reserved   uint16
	AHNum      uint32
	Pad        [4]uint32
	AV         RxeAV
}

// RxeWRMW is the mw member of union wr in struct rxe_send_wr (BIND_MW).
type RxeWRMW struct {
	_      structs.HostLayout
	Addr   uint64
	Length uint64
	MRLKey uint32
	MWRKey uint32
	RKey   uint32
	Access uint32
}

// RxeSGE is struct rxe_sge (include/uapi/rdma/rdma_user_rxe.h).
type RxeSGE struct {
	_      structs.HostLayout
	Addr   uint64
	Length uint32
	LKey   uint32
}

// MMInfo is struct mminfo (include/uapi/rdma/rdma_user_rxe.h): where to mmap a
// queue. Offset is an mmap offset cookie on the uverbs fd, valid for exactly one
// mapping of at most Size bytes.
type MMInfo struct {
	_      structs.HostLayout
	Offset uint64
	Size   uint32
	Pad    uint32
}

// RxeDMAInfo is struct rxe_dma_info (include/uapi/rdma/rdma_user_rxe.h). It is
// followed in the WQE slot by the union of inline_data[], atomic_wr[] and
// sge[] flexible arrays, which start at its end (offset 24).
type RxeDMAInfo struct {
	_         structs.HostLayout
	Length    uint32
	Resid     uint32
	CurSGE    uint32
	NumSGE    uint32
	SGEOffset uint32
	Reserved  uint32
}

// RxeSendWQE is struct rxe_send_wqe (include/uapi/rdma/rdma_user_rxe.h): the
// fixed part of a send ring slot; SGEs or inline data follow at offset 208.
type RxeSendWQE struct {
	_           structs.HostLayout
	WR          RxeSendWR
	Status      uint32
	State       uint32
	IOVA        uint64
	Mask        uint32
	FirstPSN    uint32
	LastPSN     uint32
	AckLength   uint32
	SSN         uint32
	HasRdAtomic uint32
	DMA         RxeDMAInfo
}

// RxeRecvWQE is struct rxe_recv_wqe (include/uapi/rdma/rdma_user_rxe.h): the
// fixed part of a receive ring slot; SGEs follow at offset 40.
type RxeRecvWQE struct {
	_        structs.HostLayout
	WrID     uint64
	Reserved uint32
	Padding  uint32
	DMA      RxeDMAInfo
}

// RxeCreateAHResp is struct rxe_create_ah_resp (include/uapi/rdma/rdma_user_rxe.h).
type RxeCreateAHResp struct {
	_        structs.HostLayout
	AHNum    uint32
	Reserved uint32
}

// RxeCreateCQResp is struct rxe_create_cq_resp (include/uapi/rdma/rdma_user_rxe.h).
type RxeCreateCQResp struct {
	_  structs.HostLayout
	MI MMInfo
}

// RxeResizeCQResp is struct rxe_resize_cq_resp (include/uapi/rdma/rdma_user_rxe.h).
type RxeResizeCQResp struct {
	_  structs.HostLayout
	MI MMInfo
}

// RxeCreateQPResp is struct rxe_create_qp_resp (include/uapi/rdma/rdma_user_rxe.h).
// The receive queue comes first; a QP on an SRQ gets RQMI.Size 0.
type RxeCreateQPResp struct {
	_    structs.HostLayout
	RQMI MMInfo
	SQMI MMInfo
}

// RxeCreateSRQResp is struct rxe_create_srq_resp
// (include/uapi/rdma/rdma_user_rxe.h).
type RxeCreateSRQResp struct {
	_        structs.HostLayout
	MI       MMInfo
	SRQNum   uint32
	Reserved uint32
}

// RxeModifySRQCmd is struct rxe_modify_srq_cmd (include/uapi/rdma/rdma_user_rxe.h):
// the driver part of MODIFY_SRQ, pointing at an MMInfo the kernel fills when
// IB_SRQ_MAX_WR resizes the queue.
type RxeModifySRQCmd struct {
	_            structs.HostLayout
	MmapInfoAddr uint64
}

// RxeQueueBuf is struct rxe_queue_buf (include/uapi/rdma/rdma_user_rxe.h): the
// header at the start of every mapped rxe queue. The slots (data[]) start at its
// end, offset 384; slot i is at 384 + i<<Log2ElemSize. ProducerIndex and
// ConsumerIndex are kept masked by IndexMask and live on separate cache lines.
type RxeQueueBuf struct {
	_             structs.HostLayout
	Log2ElemSize  uint32
	IndexMask     uint32
	Pad1          [30]uint32
	ProducerIndex uint32
	Pad2          [31]uint32
	ConsumerIndex uint32
	Pad3          [31]uint32
}
