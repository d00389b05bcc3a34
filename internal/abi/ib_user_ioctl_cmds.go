// Copyright 2026 The rdmago Authors.

package abi

// This file is include/uapi/rdma/ib_user_ioctl_cmds.h: the object, method and
// attribute ids of the RDMA_VERBS_IOCTL interface, ported by hand from rdma-core's
// kernel-headers (commit 691953d, 2026-08). Enums are numbered as in C; ids
// added after Linux 6.1 are marked with the kernel that first has them, and a
// kernel that does not know a method answers EPROTONOSUPPORT.

// Attribute ids carry a namespace in their top bits; driver attributes use
// namespace 1.
const (
	UVERBS_ID_NS_MASK  = 0xF000
	UVERBS_ID_NS_SHIFT = 12

	UVERBS_ID_DRIVER_NS           = 1 << UVERBS_ID_NS_SHIFT
	UVERBS_UDATA_DRIVER_DATA_NS   = 1
	UVERBS_UDATA_DRIVER_DATA_FLAG = UVERBS_ID_DRIVER_NS

	// UVERBS_ATTR_UHW_IN and UVERBS_ATTR_UHW_OUT carry the driver's private
	// command and response (what follows the core struct in write()).
	UVERBS_ATTR_UHW_IN           = UVERBS_ID_DRIVER_NS
	UVERBS_ATTR_UHW_OUT          = UVERBS_ID_DRIVER_NS + 1
	UVERBS_ID_DRIVER_NS_WITH_UHW = UVERBS_ID_DRIVER_NS + 2
)

// enum uverbs_default_objects
const (
	UVERBS_OBJECT_DEVICE       = 0
	UVERBS_OBJECT_PD           = 1
	UVERBS_OBJECT_COMP_CHANNEL = 2
	UVERBS_OBJECT_CQ           = 3
	UVERBS_OBJECT_QP           = 4
	UVERBS_OBJECT_SRQ          = 5
	UVERBS_OBJECT_AH           = 6
	UVERBS_OBJECT_MR           = 7
	UVERBS_OBJECT_MW           = 8
	UVERBS_OBJECT_FLOW         = 9
	UVERBS_OBJECT_XRCD         = 10
	UVERBS_OBJECT_RWQ_IND_TBL  = 11
	UVERBS_OBJECT_WQ           = 12
	UVERBS_OBJECT_FLOW_ACTION  = 13
	UVERBS_OBJECT_DM           = 14
	UVERBS_OBJECT_COUNTERS     = 15
	UVERBS_OBJECT_ASYNC_EVENT  = 16
	UVERBS_OBJECT_DMAH         = 17 // newer than Linux 6.12
	UVERBS_OBJECT_DMABUF       = 18
	UVERBS_OBJECT_COMP_CNTR    = 19
)

// enum uverbs_methods_device
const (
	UVERBS_METHOD_INVOKE_WRITE         = 0
	UVERBS_METHOD_INFO_HANDLES         = 1
	UVERBS_METHOD_QUERY_PORT           = 2
	UVERBS_METHOD_GET_CONTEXT          = 3
	UVERBS_METHOD_QUERY_CONTEXT        = 4
	UVERBS_METHOD_QUERY_GID_TABLE      = 5 // Linux 5.10
	UVERBS_METHOD_QUERY_GID_ENTRY      = 6 // Linux 5.10
	UVERBS_METHOD_QUERY_PORT_SPEED     = 7
	UVERBS_METHOD_QUERY_COMP_CNTR_CAPS = 8
)

// enum uverbs_attrs_invoke_write_cmd_attr_ids
const (
	UVERBS_ATTR_CORE_IN   = 0
	UVERBS_ATTR_CORE_OUT  = 1
	UVERBS_ATTR_WRITE_CMD = 2
)

// enum uverbs_attrs_query_port_cmd_attr_ids
const (
	UVERBS_ATTR_QUERY_PORT_PORT_NUM = 0
	UVERBS_ATTR_QUERY_PORT_RESP     = 1
)

// enum uverbs_attrs_query_port_speed_cmd_attr_ids
const (
	UVERBS_ATTR_QUERY_PORT_SPEED_PORT_NUM = 0
	UVERBS_ATTR_QUERY_PORT_SPEED_RESP     = 1
)

// enum uverbs_attrs_query_comp_cntr_caps_attr_ids
const (
	UVERBS_ATTR_QUERY_COMP_CNTR_CAPS_MAX_COUNTERS            = 0
	UVERBS_ATTR_QUERY_COMP_CNTR_CAPS_MAX_VALUE               = 1
	UVERBS_ATTR_QUERY_COMP_CNTR_CAPS_SUPPORTED_QP_ATTACH_OPS = 2
)

// enum uverbs_attrs_get_context_attr_ids
const (
	UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS = 0
	UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT     = 1
	UVERBS_ATTR_GET_CONTEXT_FD_ARR           = 2
)

// enum uverbs_attrs_query_context_attr_ids
const (
	UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS = 0
	UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT     = 1
)

// enum uverbs_attrs_create_cq_cmd_attr_ids
const (
	UVERBS_ATTR_CREATE_CQ_HANDLE        = 0
	UVERBS_ATTR_CREATE_CQ_CQE           = 1
	UVERBS_ATTR_CREATE_CQ_USER_HANDLE   = 2
	UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL  = 3
	UVERBS_ATTR_CREATE_CQ_COMP_VECTOR   = 4
	UVERBS_ATTR_CREATE_CQ_FLAGS         = 5
	UVERBS_ATTR_CREATE_CQ_RESP_CQE      = 6
	UVERBS_ATTR_CREATE_CQ_EVENT_FD      = 7
	UVERBS_ATTR_CREATE_CQ_BUFFER_VA     = 8
	UVERBS_ATTR_CREATE_CQ_BUFFER_LENGTH = 9
	UVERBS_ATTR_CREATE_CQ_BUFFER_FD     = 10
	UVERBS_ATTR_CREATE_CQ_BUFFER_OFFSET = 11
	UVERBS_ATTR_CREATE_CQ_BUF_UMEM      = 12
)

// enum uverbs_attrs_destroy_cq_cmd_attr_ids
const (
	UVERBS_ATTR_DESTROY_CQ_HANDLE = 0
	UVERBS_ATTR_DESTROY_CQ_RESP   = 1
)

// enum uverbs_attrs_create_flow_action_esp
const (
	UVERBS_ATTR_CREATE_FLOW_ACTION_ESP_HANDLE = 0
	UVERBS_ATTR_FLOW_ACTION_ESP_ATTRS         = 1
	UVERBS_ATTR_FLOW_ACTION_ESP_ESN           = 2
	UVERBS_ATTR_FLOW_ACTION_ESP_KEYMAT        = 3
	UVERBS_ATTR_FLOW_ACTION_ESP_REPLAY        = 4
	UVERBS_ATTR_FLOW_ACTION_ESP_ENCAP         = 5
)

// enum uverbs_attrs_modify_flow_action_esp / destroy_flow_action_esp
const (
	UVERBS_ATTR_MODIFY_FLOW_ACTION_ESP_HANDLE = UVERBS_ATTR_CREATE_FLOW_ACTION_ESP_HANDLE
	UVERBS_ATTR_DESTROY_FLOW_ACTION_HANDLE    = 0
)

// enum uverbs_attrs_create_qp_cmd_attr_ids
const (
	UVERBS_ATTR_CREATE_QP_HANDLE           = 0
	UVERBS_ATTR_CREATE_QP_XRCD_HANDLE      = 1
	UVERBS_ATTR_CREATE_QP_PD_HANDLE        = 2
	UVERBS_ATTR_CREATE_QP_SRQ_HANDLE       = 3
	UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE   = 4
	UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE   = 5
	UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE = 6
	UVERBS_ATTR_CREATE_QP_USER_HANDLE      = 7
	UVERBS_ATTR_CREATE_QP_CAP              = 8
	UVERBS_ATTR_CREATE_QP_TYPE             = 9
	UVERBS_ATTR_CREATE_QP_FLAGS            = 10
	UVERBS_ATTR_CREATE_QP_SOURCE_QPN       = 11
	UVERBS_ATTR_CREATE_QP_EVENT_FD         = 12
	UVERBS_ATTR_CREATE_QP_RESP_CAP         = 13
	UVERBS_ATTR_CREATE_QP_RESP_QP_NUM      = 14
	UVERBS_ATTR_CREATE_QP_BUF_UMEM         = 15
	UVERBS_ATTR_CREATE_QP_RQ_BUF_UMEM      = 16
	UVERBS_ATTR_CREATE_QP_SQ_BUF_UMEM      = 17
)

// enum uverbs_attrs_destroy_qp_cmd_attr_ids
const (
	UVERBS_ATTR_DESTROY_QP_HANDLE = 0
	UVERBS_ATTR_DESTROY_QP_RESP   = 1
)

// enum uverbs_attrs_qp_attach_comp_cntr_cmd_attr_ids
const (
	UVERBS_ATTR_QP_ATTACH_COMP_CNTR_HANDLE      = 0
	UVERBS_ATTR_QP_ATTACH_COMP_CNTR_CNTR_HANDLE = 1
	UVERBS_ATTR_QP_ATTACH_COMP_CNTR_OP_MASK     = 2
)

// enum uverbs_methods_qp
const (
	UVERBS_METHOD_QP_CREATE           = 0
	UVERBS_METHOD_QP_DESTROY          = 1
	UVERBS_METHOD_QP_ATTACH_COMP_CNTR = 2
)

// enum uverbs_attrs_create_srq_cmd_attr_ids
const (
	UVERBS_ATTR_CREATE_SRQ_HANDLE       = 0
	UVERBS_ATTR_CREATE_SRQ_PD_HANDLE    = 1
	UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE  = 2
	UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE    = 3
	UVERBS_ATTR_CREATE_SRQ_USER_HANDLE  = 4
	UVERBS_ATTR_CREATE_SRQ_MAX_WR       = 5
	UVERBS_ATTR_CREATE_SRQ_MAX_SGE      = 6
	UVERBS_ATTR_CREATE_SRQ_LIMIT        = 7
	UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS = 8
	UVERBS_ATTR_CREATE_SRQ_TYPE         = 9
	UVERBS_ATTR_CREATE_SRQ_EVENT_FD     = 10
	UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR  = 11
	UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE = 12
	UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM = 13
)

// enum uverbs_attrs_destroy_srq_cmd_attr_ids
const (
	UVERBS_ATTR_DESTROY_SRQ_HANDLE = 0
	UVERBS_ATTR_DESTROY_SRQ_RESP   = 1
)

// enum uverbs_methods_srq
const (
	UVERBS_METHOD_SRQ_CREATE  = 0
	UVERBS_METHOD_SRQ_DESTROY = 1
)

// enum uverbs_methods_cq
const (
	UVERBS_METHOD_CQ_CREATE  = 0
	UVERBS_METHOD_CQ_DESTROY = 1
)

// enum uverbs_attrs_create_wq_cmd_attr_ids
const (
	UVERBS_ATTR_CREATE_WQ_HANDLE       = 0
	UVERBS_ATTR_CREATE_WQ_PD_HANDLE    = 1
	UVERBS_ATTR_CREATE_WQ_CQ_HANDLE    = 2
	UVERBS_ATTR_CREATE_WQ_USER_HANDLE  = 3
	UVERBS_ATTR_CREATE_WQ_TYPE         = 4
	UVERBS_ATTR_CREATE_WQ_EVENT_FD     = 5
	UVERBS_ATTR_CREATE_WQ_MAX_WR       = 6
	UVERBS_ATTR_CREATE_WQ_MAX_SGE      = 7
	UVERBS_ATTR_CREATE_WQ_FLAGS        = 8
	UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR  = 9
	UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE = 10
	UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM  = 11
)

// enum uverbs_attrs_destroy_wq_cmd_attr_ids
const (
	UVERBS_ATTR_DESTROY_WQ_HANDLE = 0
	UVERBS_ATTR_DESTROY_WQ_RESP   = 1
)

// enum uverbs_methods_wq
const (
	UVERBS_METHOD_WQ_CREATE  = 0
	UVERBS_METHOD_WQ_DESTROY = 1
)

// enum uverbs_methods_actions_flow_action_ops
const (
	UVERBS_METHOD_FLOW_ACTION_ESP_CREATE = 0
	UVERBS_METHOD_FLOW_ACTION_DESTROY    = 1
	UVERBS_METHOD_FLOW_ACTION_ESP_MODIFY = 2
)

// enum uverbs_attrs_alloc_dm_cmd_attr_ids
const (
	UVERBS_ATTR_ALLOC_DM_HANDLE    = 0
	UVERBS_ATTR_ALLOC_DM_LENGTH    = 1
	UVERBS_ATTR_ALLOC_DM_ALIGNMENT = 2
)

// enum uverbs_attrs_free_dm_cmd_attr_ids
const UVERBS_ATTR_FREE_DM_HANDLE = 0

// enum uverbs_methods_dm
const (
	UVERBS_METHOD_DM_ALLOC = 0
	UVERBS_METHOD_DM_FREE  = 1
)

// enum uverbs_attrs_alloc_dmah_cmd_attr_ids (newer than Linux 6.12)
const (
	UVERBS_ATTR_ALLOC_DMAH_HANDLE       = 0
	UVERBS_ATTR_ALLOC_DMAH_CPU_ID       = 1
	UVERBS_ATTR_ALLOC_DMAH_TPH_MEM_TYPE = 2
	UVERBS_ATTR_ALLOC_DMAH_PH           = 3
)

// enum uverbs_attrs_free_dmah_cmd_attr_ids
const UVERBS_ATTR_FREE_DMA_HANDLE = 0

// enum uverbs_methods_dmah
const (
	UVERBS_METHOD_DMAH_ALLOC = 0
	UVERBS_METHOD_DMAH_FREE  = 1
)

// enum uverbs_attrs_alloc_dmabuf_cmd_attr_ids
const (
	UVERBS_ATTR_ALLOC_DMABUF_HANDLE = 0
	UVERBS_ATTR_ALLOC_DMABUF_PGOFF  = 1
)

// enum uverbs_methods_dmabuf
const UVERBS_METHOD_DMABUF_ALLOC = 0

// enum uverbs_attrs_reg_dm_mr_cmd_attr_ids
const (
	UVERBS_ATTR_REG_DM_MR_HANDLE       = 0
	UVERBS_ATTR_REG_DM_MR_OFFSET       = 1
	UVERBS_ATTR_REG_DM_MR_LENGTH       = 2
	UVERBS_ATTR_REG_DM_MR_PD_HANDLE    = 3
	UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS = 4
	UVERBS_ATTR_REG_DM_MR_DM_HANDLE    = 5
	UVERBS_ATTR_REG_DM_MR_RESP_LKEY    = 6
	UVERBS_ATTR_REG_DM_MR_RESP_RKEY    = 7
)

// enum uverbs_methods_mr
const (
	UVERBS_METHOD_DM_MR_REG     = 0
	UVERBS_METHOD_MR_DESTROY    = 1
	UVERBS_METHOD_ADVISE_MR     = 2
	UVERBS_METHOD_QUERY_MR      = 3
	UVERBS_METHOD_REG_DMABUF_MR = 4
	UVERBS_METHOD_REG_MR        = 5 // newer than Linux 6.12
)

// enum uverbs_attrs_mr_destroy_ids
const UVERBS_ATTR_DESTROY_MR_HANDLE = 0

// enum uverbs_attrs_advise_mr_cmd_attr_ids
const (
	UVERBS_ATTR_ADVISE_MR_PD_HANDLE = 0
	UVERBS_ATTR_ADVISE_MR_ADVICE    = 1
	UVERBS_ATTR_ADVISE_MR_FLAGS     = 2
	UVERBS_ATTR_ADVISE_MR_SGE_LIST  = 3
)

// enum uverbs_attrs_query_mr_cmd_attr_ids
const (
	UVERBS_ATTR_QUERY_MR_HANDLE      = 0
	UVERBS_ATTR_QUERY_MR_RESP_LKEY   = 1
	UVERBS_ATTR_QUERY_MR_RESP_RKEY   = 2
	UVERBS_ATTR_QUERY_MR_RESP_LENGTH = 3
	UVERBS_ATTR_QUERY_MR_RESP_IOVA   = 4
)

// enum uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids
const (
	UVERBS_ATTR_REG_DMABUF_MR_HANDLE       = 0
	UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE    = 1
	UVERBS_ATTR_REG_DMABUF_MR_OFFSET       = 2
	UVERBS_ATTR_REG_DMABUF_MR_LENGTH       = 3
	UVERBS_ATTR_REG_DMABUF_MR_IOVA         = 4
	UVERBS_ATTR_REG_DMABUF_MR_FD           = 5
	UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS = 6
	UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY    = 7
	UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY    = 8
)

// enum uverbs_attrs_reg_mr_cmd_attr_ids (newer than Linux 6.12)
const (
	UVERBS_ATTR_REG_MR_HANDLE       = 0
	UVERBS_ATTR_REG_MR_PD_HANDLE    = 1
	UVERBS_ATTR_REG_MR_DMA_HANDLE   = 2
	UVERBS_ATTR_REG_MR_IOVA         = 3
	UVERBS_ATTR_REG_MR_ADDR         = 4
	UVERBS_ATTR_REG_MR_LENGTH       = 5
	UVERBS_ATTR_REG_MR_ACCESS_FLAGS = 6
	UVERBS_ATTR_REG_MR_FD           = 7
	UVERBS_ATTR_REG_MR_FD_OFFSET    = 8
	UVERBS_ATTR_REG_MR_RESP_LKEY    = 9
	UVERBS_ATTR_REG_MR_RESP_RKEY    = 10
)

// enum uverbs_attrs_create_counters_cmd_attr_ids and friends
const (
	UVERBS_ATTR_CREATE_COUNTERS_HANDLE  = 0
	UVERBS_ATTR_DESTROY_COUNTERS_HANDLE = 0
	UVERBS_ATTR_READ_COUNTERS_HANDLE    = 0
	UVERBS_ATTR_READ_COUNTERS_BUFF      = 1
	UVERBS_ATTR_READ_COUNTERS_FLAGS     = 2
)

// enum uverbs_methods_actions_counters_ops
const (
	UVERBS_METHOD_COUNTERS_CREATE  = 0
	UVERBS_METHOD_COUNTERS_DESTROY = 1
	UVERBS_METHOD_COUNTERS_READ    = 2
)

// enum uverbs_attrs_info_handles_id
const (
	UVERBS_ATTR_INFO_OBJECT_ID     = 0
	UVERBS_ATTR_INFO_TOTAL_HANDLES = 1
	UVERBS_ATTR_INFO_HANDLES_LIST  = 2
)

// Destroy methods and their handle attributes of the simple objects
// (enum uverbs_methods_{pd,mw,xrcd,ah,rwq_ind_tbl,flow} and
// enum uverbs_attrs_*_destroy_ids).
const (
	UVERBS_METHOD_PD_DESTROY               = 0
	UVERBS_ATTR_DESTROY_PD_HANDLE          = 0
	UVERBS_METHOD_MW_DESTROY               = 0
	UVERBS_ATTR_DESTROY_MW_HANDLE          = 0
	UVERBS_METHOD_XRCD_DESTROY             = 0
	UVERBS_ATTR_DESTROY_XRCD_HANDLE        = 0
	UVERBS_METHOD_AH_DESTROY               = 0
	UVERBS_ATTR_DESTROY_AH_HANDLE          = 0
	UVERBS_METHOD_RWQ_IND_TBL_DESTROY      = 0
	UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE = 0
	UVERBS_METHOD_FLOW_DESTROY             = 0
	UVERBS_ATTR_DESTROY_FLOW_HANDLE        = 0
)

// enum uverbs_method_async_event / uverbs_attrs_async_event_create
const (
	UVERBS_METHOD_ASYNC_EVENT_ALLOC         = 0
	UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE = 0
)

// enum uverbs_attrs_query_gid_table_cmd_attr_ids
const (
	UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE       = 0
	UVERBS_ATTR_QUERY_GID_TABLE_FLAGS            = 1
	UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES     = 2
	UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES = 3
)

// enum uverbs_attrs_query_gid_entry_cmd_attr_ids
const (
	UVERBS_ATTR_QUERY_GID_ENTRY_PORT       = 0
	UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX  = 1
	UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS      = 2
	UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY = 3
)

// enum uverbs_methods_comp_cntr and its attributes (newer than Linux 6.12)
const (
	UVERBS_METHOD_COMP_CNTR_CREATE  = 0
	UVERBS_METHOD_COMP_CNTR_DESTROY = 1
	UVERBS_METHOD_COMP_CNTR_MODIFY  = 2
	UVERBS_METHOD_COMP_CNTR_READ    = 3

	UVERBS_ATTR_CREATE_COMP_CNTR_HANDLE   = 0
	UVERBS_ATTR_DESTROY_COMP_CNTR_HANDLE  = 0
	UVERBS_ATTR_MODIFY_COMP_CNTR_HANDLE   = 0
	UVERBS_ATTR_MODIFY_COMP_CNTR_ENTRY    = 1
	UVERBS_ATTR_MODIFY_COMP_CNTR_OP       = 2
	UVERBS_ATTR_MODIFY_COMP_CNTR_VALUE    = 3
	UVERBS_ATTR_READ_COMP_CNTR_HANDLE     = 0
	UVERBS_ATTR_READ_COMP_CNTR_ENTRY      = 1
	UVERBS_ATTR_READ_COMP_CNTR_RESP_VALUE = 2
)
