// Copyright 2026 The rdmago Authors.

package abi

import "structs"

// This file is include/uapi/rdma/ib_user_ioctl_verbs.h: enums and structs shared
// by the write() and ioctl interfaces, ported by hand from rdma-core's
// kernel-headers (commit 691953d, 2026-08) and checked against the BTF of Linux
// 6.1 and 6.12. The ESP flow-action structs (mlx5 only) are not ported.

// Optional access flags: bits the kernel ignores when unsupported.
const (
	IB_UVERBS_ACCESS_OPTIONAL_FIRST = 1 << 20
	IB_UVERBS_ACCESS_OPTIONAL_LAST  = 1 << 29
)

// enum ib_uverbs_core_support
const (
	IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS = 1 << 0
	IB_UVERBS_CORE_SUPPORT_ROBUST_UDATA       = 1 << 1 // newer than Linux 6.12
)

// enum ib_uverbs_access_flags
const (
	IB_UVERBS_ACCESS_LOCAL_WRITE      = 1 << 0
	IB_UVERBS_ACCESS_REMOTE_WRITE     = 1 << 1
	IB_UVERBS_ACCESS_REMOTE_READ      = 1 << 2
	IB_UVERBS_ACCESS_REMOTE_ATOMIC    = 1 << 3
	IB_UVERBS_ACCESS_MW_BIND          = 1 << 4
	IB_UVERBS_ACCESS_ZERO_BASED       = 1 << 5
	IB_UVERBS_ACCESS_ON_DEMAND        = 1 << 6
	IB_UVERBS_ACCESS_HUGETLB          = 1 << 7
	IB_UVERBS_ACCESS_FLUSH_GLOBAL     = 1 << 8 // Linux 6.2
	IB_UVERBS_ACCESS_FLUSH_PERSISTENT = 1 << 9 // Linux 6.2
	IB_UVERBS_ACCESS_RELAXED_ORDERING = IB_UVERBS_ACCESS_OPTIONAL_FIRST
	IB_UVERBS_ACCESS_OPTIONAL_RANGE   = ((IB_UVERBS_ACCESS_OPTIONAL_LAST << 1) - 1) &^ (IB_UVERBS_ACCESS_OPTIONAL_FIRST - 1)
)

// enum ib_uverbs_srq_type
const (
	IB_UVERBS_SRQT_BASIC = 0
	IB_UVERBS_SRQT_XRC   = 1
	IB_UVERBS_SRQT_TM    = 2
)

// enum ib_uverbs_wq_type
const IB_UVERBS_WQT_RQ = 0

// enum ib_uverbs_wq_flags
const (
	IB_UVERBS_WQ_FLAGS_CVLAN_STRIPPING       = 1 << 0
	IB_UVERBS_WQ_FLAGS_SCATTER_FCS           = 1 << 1
	IB_UVERBS_WQ_FLAGS_DELAY_DROP            = 1 << 2
	IB_UVERBS_WQ_FLAGS_PCI_WRITE_END_PADDING = 1 << 3
)

// enum ib_uverbs_qp_type
const (
	IB_UVERBS_QPT_RC         = 2
	IB_UVERBS_QPT_UC         = 3
	IB_UVERBS_QPT_UD         = 4
	IB_UVERBS_QPT_RAW_PACKET = 8
	IB_UVERBS_QPT_XRC_INI    = 9
	IB_UVERBS_QPT_XRC_TGT    = 10
	IB_UVERBS_QPT_DRIVER     = 0xFF
)

// enum ib_uverbs_qp_create_flags
const (
	IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK = 1 << 1
	IB_UVERBS_QP_CREATE_SCATTER_FCS              = 1 << 8
	IB_UVERBS_QP_CREATE_CVLAN_STRIPPING          = 1 << 9
	IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING    = 1 << 11
	IB_UVERBS_QP_CREATE_SQ_SIG_ALL               = 1 << 12
)

// enum ib_uverbs_query_port_cap_flags: QueryPortResp.PortCapFlags.
const (
	IB_UVERBS_PCF_SM                              = 1 << 1
	IB_UVERBS_PCF_NOTICE_SUP                      = 1 << 2
	IB_UVERBS_PCF_TRAP_SUP                        = 1 << 3
	IB_UVERBS_PCF_OPT_IPD_SUP                     = 1 << 4
	IB_UVERBS_PCF_AUTO_MIGR_SUP                   = 1 << 5
	IB_UVERBS_PCF_SL_MAP_SUP                      = 1 << 6
	IB_UVERBS_PCF_MKEY_NVRAM                      = 1 << 7
	IB_UVERBS_PCF_PKEY_NVRAM                      = 1 << 8
	IB_UVERBS_PCF_LED_INFO_SUP                    = 1 << 9
	IB_UVERBS_PCF_SM_DISABLED                     = 1 << 10
	IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP              = 1 << 11
	IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP       = 1 << 12
	IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP             = 1 << 14
	IB_UVERBS_PCF_CM_SUP                          = 1 << 16
	IB_UVERBS_PCF_SNMP_TUNNEL_SUP                 = 1 << 17
	IB_UVERBS_PCF_REINIT_SUP                      = 1 << 18
	IB_UVERBS_PCF_DEVICE_MGMT_SUP                 = 1 << 19
	IB_UVERBS_PCF_VENDOR_CLASS_SUP                = 1 << 20
	IB_UVERBS_PCF_DR_NOTICE_SUP                   = 1 << 21
	IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP             = 1 << 22
	IB_UVERBS_PCF_BOOT_MGMT_SUP                   = 1 << 23
	IB_UVERBS_PCF_LINK_LATENCY_SUP                = 1 << 24
	IB_UVERBS_PCF_CLIENT_REG_SUP                  = 1 << 25
	IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP      = 1 << 27
	IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP  = 1 << 28
	IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP = 1 << 29
	IB_UVERBS_PCF_MCAST_FDB_TOP_SUP               = 1 << 30
	IB_UVERBS_PCF_HIERARCHY_INFO_SUP              = 1 << 31
	IB_UVERBS_PCF_IP_BASED_GIDS                   = 1 << 26 // internal, not an IBA flag
)

// enum ib_uverbs_query_port_flags: QueryPortResp.Flags.
const IB_UVERBS_QPF_GRH_REQUIRED = 1 << 0

// enum ib_uverbs_read_counters_flags
const IB_UVERBS_READ_COUNTERS_PREFER_CACHED = 1 << 0

// enum ib_uverbs_advise_mr_advice
const (
	IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH          = 0
	IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE    = 1
	IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT = 2
)

// enum ib_uverbs_advise_mr_flag
const IB_UVERBS_ADVISE_MR_FLAG_FLUSH = 1 << 0

// QueryPortRespEx is struct ib_uverbs_query_port_resp_ex
// (include/uapi/rdma/ib_user_ioctl_verbs.h): the UVERBS_METHOD_QUERY_PORT
// response. ActiveSpeedEx was carved out of reserved bytes after Linux 6.1,
// which leaves it zero.
type QueryPortRespEx struct {
	_             structs.HostLayout
	LegacyResp    QueryPortResp
	PortCapFlags2 uint16
	Reserved      [2]uint8
	ActiveSpeedEx uint32
}

// QPCap is struct ib_uverbs_qp_cap (include/uapi/rdma/ib_user_ioctl_verbs.h).
type QPCap struct {
	_             structs.HostLayout
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
}

// enum rdma_driver_id: IoctlHdr.DriverID.
const (
	RDMA_DRIVER_UNKNOWN    = 0
	RDMA_DRIVER_MLX5       = 1
	RDMA_DRIVER_MLX4       = 2
	RDMA_DRIVER_CXGB3      = 3
	RDMA_DRIVER_CXGB4      = 4
	RDMA_DRIVER_MTHCA      = 5
	RDMA_DRIVER_BNXT_RE    = 6
	RDMA_DRIVER_OCRDMA     = 7
	RDMA_DRIVER_NES        = 8
	RDMA_DRIVER_I40IW      = 9
	RDMA_DRIVER_IRDMA      = RDMA_DRIVER_I40IW
	RDMA_DRIVER_VMW_PVRDMA = 10
	RDMA_DRIVER_QEDR       = 11
	RDMA_DRIVER_HNS        = 12
	RDMA_DRIVER_USNIC      = 13
	RDMA_DRIVER_RXE        = 14
	RDMA_DRIVER_HFI1       = 15
	RDMA_DRIVER_QIB        = 16
	RDMA_DRIVER_EFA        = 17
	RDMA_DRIVER_SIW        = 18
	RDMA_DRIVER_ERDMA      = 19
	RDMA_DRIVER_MANA       = 20 // not in Linux 6.1
	RDMA_DRIVER_IONIC      = 21 // newer than Linux 6.12
)

// enum ib_uverbs_gid_type: GIDEntry.GIDType.
const (
	IB_UVERBS_GID_TYPE_IB      = 0
	IB_UVERBS_GID_TYPE_ROCE_V1 = 1
	IB_UVERBS_GID_TYPE_ROCE_V2 = 2
)

// GIDEntry is struct ib_uverbs_gid_entry (include/uapi/rdma/ib_user_ioctl_verbs.h):
// one entry of the QUERY_GID_TABLE / QUERY_GID_ENTRY responses (Linux 5.10+).
// GID holds the 16 raw GID bytes (declared __aligned_u64 gid[2] in C).
type GIDEntry struct {
	_             structs.HostLayout
	GID           [2]uint64
	GIDIndex      uint32
	PortNum       uint32
	GIDType       uint32 // enum ib_uverbs_gid_type
	NetdevIfindex uint32 // 0 when no netdev is associated
}

// enum ib_uverbs_buffer_type (newer than Linux 6.12)
const (
	IB_UVERBS_BUFFER_TYPE_DMABUF = 0
	IB_UVERBS_BUFFER_TYPE_VA     = 1
)

// BufferDesc is struct ib_uverbs_buffer_desc
// (include/uapi/rdma/ib_user_ioctl_verbs.h, newer than Linux 6.12).
type BufferDesc struct {
	_             structs.HostLayout
	Type          uint32
	FD            int32
	Flags         uint32
	OptionalFlags uint32
	Addr          uint64
	Length        uint64
}

// enum ib_uverbs_comp_cntr_entry, ib_uverbs_comp_cntr_modify_op and
// ib_uverbs_qp_attach_comp_cntr_op (newer than Linux 6.12)
const (
	IB_UVERBS_COMP_CNTR_ENTRY_COMP = 0
	IB_UVERBS_COMP_CNTR_ENTRY_ERR  = 1

	IB_UVERBS_COMP_CNTR_MODIFY_OP_SET = 0
	IB_UVERBS_COMP_CNTR_MODIFY_OP_INC = 1

	IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_SEND              = 1 << 0
	IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RECV              = 1 << 1
	IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RDMA_READ         = 1 << 2
	IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ  = 1 << 3
	IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE        = 1 << 4
	IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE = 1 << 5
)
