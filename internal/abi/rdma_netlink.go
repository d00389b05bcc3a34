// Copyright 2026 The rdmago Authors.

package abi

// This file is include/uapi/rdma/rdma_netlink.h: the RDMA netlink (NETLINK_RDMA)
// protocol, of which rdmago uses the NLDEV client to list devices and ports, add
// and delete links (Soft-RoCE), and dump resources. Values are written out so they
// can be read; the test compares them with the header (rdma-core v44 / Linux 6.1).

// RDMA_NL_GET_TYPE is the C macro of the same name: the nlmsg_type of a
// message for netlink client and operation op.
func RDMA_NL_GET_TYPE(client, op uint16) uint16 { return client<<10 + op }

// RDMA_NL_GET_CLIENT is the C macro of the same name.
func RDMA_NL_GET_CLIENT(typ uint16) uint16 { return (typ & (((1 << 6) - 1) << 10)) >> 10 }

// RDMA_NL_GET_OP is the C macro of the same name.
func RDMA_NL_GET_OP(typ uint16) uint16 { return typ & ((1 << 10) - 1) }

// enum anonymous
const (
	RDMA_NL_IWCM        = 2
	RDMA_NL_RSVD        = 3
	RDMA_NL_LS          = 4
	RDMA_NL_NLDEV       = 5
	RDMA_NL_NUM_CLIENTS = 6
)

// enum anonymous
const (
	RDMA_NODE_IB_CA       = 1
	RDMA_NODE_IB_SWITCH   = 2
	RDMA_NODE_IB_ROUTER   = 3
	RDMA_NODE_RNIC        = 4
	RDMA_NODE_USNIC       = 5
	RDMA_NODE_USNIC_UDP   = 6
	RDMA_NODE_UNSPECIFIED = 7
)

// enum rdma_nldev_command
const (
	RDMA_NLDEV_CMD_UNSPEC          = 0
	RDMA_NLDEV_CMD_GET             = 1
	RDMA_NLDEV_CMD_SET             = 2
	RDMA_NLDEV_CMD_NEWLINK         = 3
	RDMA_NLDEV_CMD_DELLINK         = 4
	RDMA_NLDEV_CMD_PORT_GET        = 5
	RDMA_NLDEV_CMD_SYS_GET         = 6
	RDMA_NLDEV_CMD_SYS_SET         = 7
	RDMA_NLDEV_CMD_RES_GET         = 9
	RDMA_NLDEV_CMD_RES_QP_GET      = 10
	RDMA_NLDEV_CMD_RES_CM_ID_GET   = 11
	RDMA_NLDEV_CMD_RES_CQ_GET      = 12
	RDMA_NLDEV_CMD_RES_MR_GET      = 13
	RDMA_NLDEV_CMD_RES_PD_GET      = 14
	RDMA_NLDEV_CMD_GET_CHARDEV     = 15
	RDMA_NLDEV_CMD_STAT_SET        = 16
	RDMA_NLDEV_CMD_STAT_GET        = 17
	RDMA_NLDEV_CMD_STAT_DEL        = 18
	RDMA_NLDEV_CMD_RES_QP_GET_RAW  = 19
	RDMA_NLDEV_CMD_RES_CQ_GET_RAW  = 20
	RDMA_NLDEV_CMD_RES_MR_GET_RAW  = 21
	RDMA_NLDEV_CMD_RES_CTX_GET     = 22
	RDMA_NLDEV_CMD_RES_SRQ_GET     = 23
	RDMA_NLDEV_CMD_STAT_GET_STATUS = 24
	RDMA_NLDEV_NUM_OPS             = 25
)

// enum rdma_nldev_print_type
const (
	RDMA_NLDEV_PRINT_TYPE_UNSPEC = 0
	RDMA_NLDEV_PRINT_TYPE_HEX    = 1
)

// enum rdma_nldev_attr
const (
	RDMA_NLDEV_ATTR_UNSPEC                     = 0
	RDMA_NLDEV_ATTR_PAD                        = 0
	RDMA_NLDEV_ATTR_DEV_INDEX                  = 1
	RDMA_NLDEV_ATTR_DEV_NAME                   = 2
	RDMA_NLDEV_ATTR_PORT_INDEX                 = 3
	RDMA_NLDEV_ATTR_CAP_FLAGS                  = 4
	RDMA_NLDEV_ATTR_FW_VERSION                 = 5
	RDMA_NLDEV_ATTR_NODE_GUID                  = 6
	RDMA_NLDEV_ATTR_SYS_IMAGE_GUID             = 7
	RDMA_NLDEV_ATTR_SUBNET_PREFIX              = 8
	RDMA_NLDEV_ATTR_LID                        = 9
	RDMA_NLDEV_ATTR_SM_LID                     = 10
	RDMA_NLDEV_ATTR_LMC                        = 11
	RDMA_NLDEV_ATTR_PORT_STATE                 = 12
	RDMA_NLDEV_ATTR_PORT_PHYS_STATE            = 13
	RDMA_NLDEV_ATTR_DEV_NODE_TYPE              = 14
	RDMA_NLDEV_ATTR_RES_SUMMARY                = 15
	RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY          = 16
	RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME     = 17
	RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR     = 18
	RDMA_NLDEV_ATTR_RES_QP                     = 19
	RDMA_NLDEV_ATTR_RES_QP_ENTRY               = 20
	RDMA_NLDEV_ATTR_RES_LQPN                   = 21
	RDMA_NLDEV_ATTR_RES_RQPN                   = 22
	RDMA_NLDEV_ATTR_RES_RQ_PSN                 = 23
	RDMA_NLDEV_ATTR_RES_SQ_PSN                 = 24
	RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE         = 25
	RDMA_NLDEV_ATTR_RES_TYPE                   = 26
	RDMA_NLDEV_ATTR_RES_STATE                  = 27
	RDMA_NLDEV_ATTR_RES_PID                    = 28
	RDMA_NLDEV_ATTR_RES_KERN_NAME              = 29
	RDMA_NLDEV_ATTR_RES_CM_ID                  = 30
	RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY            = 31
	RDMA_NLDEV_ATTR_RES_PS                     = 32
	RDMA_NLDEV_ATTR_RES_SRC_ADDR               = 33
	RDMA_NLDEV_ATTR_RES_DST_ADDR               = 34
	RDMA_NLDEV_ATTR_RES_CQ                     = 35
	RDMA_NLDEV_ATTR_RES_CQ_ENTRY               = 36
	RDMA_NLDEV_ATTR_RES_CQE                    = 37
	RDMA_NLDEV_ATTR_RES_USECNT                 = 38
	RDMA_NLDEV_ATTR_RES_POLL_CTX               = 39
	RDMA_NLDEV_ATTR_RES_MR                     = 40
	RDMA_NLDEV_ATTR_RES_MR_ENTRY               = 41
	RDMA_NLDEV_ATTR_RES_RKEY                   = 42
	RDMA_NLDEV_ATTR_RES_LKEY                   = 43
	RDMA_NLDEV_ATTR_RES_IOVA                   = 44
	RDMA_NLDEV_ATTR_RES_MRLEN                  = 45
	RDMA_NLDEV_ATTR_RES_PD                     = 46
	RDMA_NLDEV_ATTR_RES_PD_ENTRY               = 47
	RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY         = 48
	RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY     = 49
	RDMA_NLDEV_ATTR_NDEV_INDEX                 = 50
	RDMA_NLDEV_ATTR_NDEV_NAME                  = 51
	RDMA_NLDEV_ATTR_DRIVER                     = 52
	RDMA_NLDEV_ATTR_DRIVER_ENTRY               = 53
	RDMA_NLDEV_ATTR_DRIVER_STRING              = 54
	RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE          = 55
	RDMA_NLDEV_ATTR_DRIVER_S32                 = 56
	RDMA_NLDEV_ATTR_DRIVER_U32                 = 57
	RDMA_NLDEV_ATTR_DRIVER_S64                 = 58
	RDMA_NLDEV_ATTR_DRIVER_U64                 = 59
	RDMA_NLDEV_ATTR_RES_PDN                    = 60
	RDMA_NLDEV_ATTR_RES_CQN                    = 61
	RDMA_NLDEV_ATTR_RES_MRN                    = 62
	RDMA_NLDEV_ATTR_RES_CM_IDN                 = 63
	RDMA_NLDEV_ATTR_RES_CTXN                   = 64
	RDMA_NLDEV_ATTR_LINK_TYPE                  = 65
	RDMA_NLDEV_SYS_ATTR_NETNS_MODE             = 66
	RDMA_NLDEV_ATTR_DEV_PROTOCOL               = 67
	RDMA_NLDEV_NET_NS_FD                       = 68
	RDMA_NLDEV_ATTR_CHARDEV_TYPE               = 69
	RDMA_NLDEV_ATTR_CHARDEV_NAME               = 70
	RDMA_NLDEV_ATTR_CHARDEV_ABI                = 71
	RDMA_NLDEV_ATTR_CHARDEV                    = 72
	RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID           = 73
	RDMA_NLDEV_ATTR_STAT_MODE                  = 74
	RDMA_NLDEV_ATTR_STAT_RES                   = 75
	RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK        = 76
	RDMA_NLDEV_ATTR_STAT_COUNTER               = 77
	RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY         = 78
	RDMA_NLDEV_ATTR_STAT_COUNTER_ID            = 79
	RDMA_NLDEV_ATTR_STAT_HWCOUNTERS            = 80
	RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY       = 81
	RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME  = 82
	RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE = 83
	RDMA_NLDEV_ATTR_DEV_DIM                    = 84
	RDMA_NLDEV_ATTR_RES_RAW                    = 85
	RDMA_NLDEV_ATTR_RES_CTX                    = 86
	RDMA_NLDEV_ATTR_RES_CTX_ENTRY              = 87
	RDMA_NLDEV_ATTR_RES_SRQ                    = 88
	RDMA_NLDEV_ATTR_RES_SRQ_ENTRY              = 89
	RDMA_NLDEV_ATTR_RES_SRQN                   = 90
	RDMA_NLDEV_ATTR_MIN_RANGE                  = 91
	RDMA_NLDEV_ATTR_MAX_RANGE                  = 92
	RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK           = 93
	RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX       = 94
	RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC     = 95
	RDMA_NLDEV_ATTR_MAX                        = 96
)
