// Copyright 2026 The rdmago Authors.

package trace

import (
	"strings"

	"github.com/rdmago/rdmago/internal/abi"
)

// ABINames is the Names the tracer uses: every name comes from package abi's
// port of the UAPI headers (ib_user_verbs.h, ib_user_ioctl_cmds.h,
// rdma_user_cm.h). Go cannot list constants by name, so the tables below pair
// each abi constant with its C spelling minus the common prefix.
type ABINames struct{}

var _ Names = ABINames{}

var verbsCmdNames = map[uint32]string{
	abi.IB_USER_VERBS_CMD_GET_CONTEXT:         "GET_CONTEXT",
	abi.IB_USER_VERBS_CMD_QUERY_DEVICE:        "QUERY_DEVICE",
	abi.IB_USER_VERBS_CMD_QUERY_PORT:          "QUERY_PORT",
	abi.IB_USER_VERBS_CMD_ALLOC_PD:            "ALLOC_PD",
	abi.IB_USER_VERBS_CMD_DEALLOC_PD:          "DEALLOC_PD",
	abi.IB_USER_VERBS_CMD_CREATE_AH:           "CREATE_AH",
	abi.IB_USER_VERBS_CMD_MODIFY_AH:           "MODIFY_AH",
	abi.IB_USER_VERBS_CMD_QUERY_AH:            "QUERY_AH",
	abi.IB_USER_VERBS_CMD_DESTROY_AH:          "DESTROY_AH",
	abi.IB_USER_VERBS_CMD_REG_MR:              "REG_MR",
	abi.IB_USER_VERBS_CMD_REG_SMR:             "REG_SMR",
	abi.IB_USER_VERBS_CMD_REREG_MR:            "REREG_MR",
	abi.IB_USER_VERBS_CMD_QUERY_MR:            "QUERY_MR",
	abi.IB_USER_VERBS_CMD_DEREG_MR:            "DEREG_MR",
	abi.IB_USER_VERBS_CMD_ALLOC_MW:            "ALLOC_MW",
	abi.IB_USER_VERBS_CMD_BIND_MW:             "BIND_MW",
	abi.IB_USER_VERBS_CMD_DEALLOC_MW:          "DEALLOC_MW",
	abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL: "CREATE_COMP_CHANNEL",
	abi.IB_USER_VERBS_CMD_CREATE_CQ:           "CREATE_CQ",
	abi.IB_USER_VERBS_CMD_RESIZE_CQ:           "RESIZE_CQ",
	abi.IB_USER_VERBS_CMD_DESTROY_CQ:          "DESTROY_CQ",
	abi.IB_USER_VERBS_CMD_POLL_CQ:             "POLL_CQ",
	abi.IB_USER_VERBS_CMD_PEEK_CQ:             "PEEK_CQ",
	abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ:       "REQ_NOTIFY_CQ",
	abi.IB_USER_VERBS_CMD_CREATE_QP:           "CREATE_QP",
	abi.IB_USER_VERBS_CMD_QUERY_QP:            "QUERY_QP",
	abi.IB_USER_VERBS_CMD_MODIFY_QP:           "MODIFY_QP",
	abi.IB_USER_VERBS_CMD_DESTROY_QP:          "DESTROY_QP",
	abi.IB_USER_VERBS_CMD_POST_SEND:           "POST_SEND",
	abi.IB_USER_VERBS_CMD_POST_RECV:           "POST_RECV",
	abi.IB_USER_VERBS_CMD_ATTACH_MCAST:        "ATTACH_MCAST",
	abi.IB_USER_VERBS_CMD_DETACH_MCAST:        "DETACH_MCAST",
	abi.IB_USER_VERBS_CMD_CREATE_SRQ:          "CREATE_SRQ",
	abi.IB_USER_VERBS_CMD_MODIFY_SRQ:          "MODIFY_SRQ",
	abi.IB_USER_VERBS_CMD_QUERY_SRQ:           "QUERY_SRQ",
	abi.IB_USER_VERBS_CMD_DESTROY_SRQ:         "DESTROY_SRQ",
	abi.IB_USER_VERBS_CMD_POST_SRQ_RECV:       "POST_SRQ_RECV",
	abi.IB_USER_VERBS_CMD_OPEN_XRCD:           "OPEN_XRCD",
	abi.IB_USER_VERBS_CMD_CLOSE_XRCD:          "CLOSE_XRCD",
	abi.IB_USER_VERBS_CMD_CREATE_XSRQ:         "CREATE_XSRQ",
	abi.IB_USER_VERBS_CMD_OPEN_QP:             "OPEN_QP",
}

var verbsExCmdNames = map[uint32]string{
	abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE:        "QUERY_DEVICE",
	abi.IB_USER_VERBS_EX_CMD_CREATE_CQ:           "CREATE_CQ",
	abi.IB_USER_VERBS_EX_CMD_CREATE_QP:           "CREATE_QP",
	abi.IB_USER_VERBS_EX_CMD_MODIFY_QP:           "MODIFY_QP",
	abi.IB_USER_VERBS_EX_CMD_CREATE_FLOW:         "CREATE_FLOW",
	abi.IB_USER_VERBS_EX_CMD_DESTROY_FLOW:        "DESTROY_FLOW",
	abi.IB_USER_VERBS_EX_CMD_CREATE_WQ:           "CREATE_WQ",
	abi.IB_USER_VERBS_EX_CMD_MODIFY_WQ:           "MODIFY_WQ",
	abi.IB_USER_VERBS_EX_CMD_DESTROY_WQ:          "DESTROY_WQ",
	abi.IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL:  "CREATE_RWQ_IND_TBL",
	abi.IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL: "DESTROY_RWQ_IND_TBL",
	abi.IB_USER_VERBS_EX_CMD_MODIFY_CQ:           "MODIFY_CQ",
}

var ioctlObjectNames = map[uint16]string{
	abi.UVERBS_OBJECT_DEVICE:       "DEVICE",
	abi.UVERBS_OBJECT_PD:           "PD",
	abi.UVERBS_OBJECT_COMP_CHANNEL: "COMP_CHANNEL",
	abi.UVERBS_OBJECT_CQ:           "CQ",
	abi.UVERBS_OBJECT_QP:           "QP",
	abi.UVERBS_OBJECT_SRQ:          "SRQ",
	abi.UVERBS_OBJECT_AH:           "AH",
	abi.UVERBS_OBJECT_MR:           "MR",
	abi.UVERBS_OBJECT_MW:           "MW",
	abi.UVERBS_OBJECT_FLOW:         "FLOW",
	abi.UVERBS_OBJECT_XRCD:         "XRCD",
	abi.UVERBS_OBJECT_RWQ_IND_TBL:  "RWQ_IND_TBL",
	abi.UVERBS_OBJECT_WQ:           "WQ",
	abi.UVERBS_OBJECT_FLOW_ACTION:  "FLOW_ACTION",
	abi.UVERBS_OBJECT_DM:           "DM",
	abi.UVERBS_OBJECT_COUNTERS:     "COUNTERS",
	abi.UVERBS_OBJECT_ASYNC_EVENT:  "ASYNC_EVENT",
	abi.UVERBS_OBJECT_DMAH:         "DMAH",
	abi.UVERBS_OBJECT_DMABUF:       "DMABUF",
	abi.UVERBS_OBJECT_COMP_CNTR:    "COMP_CNTR",
}

// ioctlMethodNames: method ids are per object (enum uverbs_methods_<obj>).
var ioctlMethodNames = map[uint16]map[uint16]string{
	abi.UVERBS_OBJECT_DEVICE: {
		abi.UVERBS_METHOD_INVOKE_WRITE:         "INVOKE_WRITE",
		abi.UVERBS_METHOD_INFO_HANDLES:         "INFO_HANDLES",
		abi.UVERBS_METHOD_QUERY_PORT:           "QUERY_PORT",
		abi.UVERBS_METHOD_GET_CONTEXT:          "GET_CONTEXT",
		abi.UVERBS_METHOD_QUERY_CONTEXT:        "QUERY_CONTEXT",
		abi.UVERBS_METHOD_QUERY_GID_TABLE:      "QUERY_GID_TABLE",
		abi.UVERBS_METHOD_QUERY_GID_ENTRY:      "QUERY_GID_ENTRY",
		abi.UVERBS_METHOD_QUERY_PORT_SPEED:     "QUERY_PORT_SPEED",
		abi.UVERBS_METHOD_QUERY_COMP_CNTR_CAPS: "QUERY_COMP_CNTR_CAPS",
	},
	abi.UVERBS_OBJECT_PD: {abi.UVERBS_METHOD_PD_DESTROY: "DESTROY"},
	abi.UVERBS_OBJECT_QP: {
		abi.UVERBS_METHOD_QP_CREATE:           "CREATE",
		abi.UVERBS_METHOD_QP_DESTROY:          "DESTROY",
		abi.UVERBS_METHOD_QP_ATTACH_COMP_CNTR: "ATTACH_COMP_CNTR",
	},
	abi.UVERBS_OBJECT_SRQ: {abi.UVERBS_METHOD_SRQ_CREATE: "CREATE", abi.UVERBS_METHOD_SRQ_DESTROY: "DESTROY"},
	abi.UVERBS_OBJECT_CQ:  {abi.UVERBS_METHOD_CQ_CREATE: "CREATE", abi.UVERBS_METHOD_CQ_DESTROY: "DESTROY"},
	abi.UVERBS_OBJECT_WQ:  {abi.UVERBS_METHOD_WQ_CREATE: "CREATE", abi.UVERBS_METHOD_WQ_DESTROY: "DESTROY"},
	abi.UVERBS_OBJECT_FLOW_ACTION: {
		abi.UVERBS_METHOD_FLOW_ACTION_ESP_CREATE: "ESP_CREATE",
		abi.UVERBS_METHOD_FLOW_ACTION_DESTROY:    "DESTROY",
		abi.UVERBS_METHOD_FLOW_ACTION_ESP_MODIFY: "ESP_MODIFY",
	},
	abi.UVERBS_OBJECT_DM:     {abi.UVERBS_METHOD_DM_ALLOC: "ALLOC", abi.UVERBS_METHOD_DM_FREE: "FREE"},
	abi.UVERBS_OBJECT_DMAH:   {abi.UVERBS_METHOD_DMAH_ALLOC: "ALLOC", abi.UVERBS_METHOD_DMAH_FREE: "FREE"},
	abi.UVERBS_OBJECT_DMABUF: {abi.UVERBS_METHOD_DMABUF_ALLOC: "ALLOC"},
	abi.UVERBS_OBJECT_MR: {
		abi.UVERBS_METHOD_DM_MR_REG:     "DM_MR_REG",
		abi.UVERBS_METHOD_MR_DESTROY:    "DESTROY",
		abi.UVERBS_METHOD_ADVISE_MR:     "ADVISE_MR",
		abi.UVERBS_METHOD_QUERY_MR:      "QUERY_MR",
		abi.UVERBS_METHOD_REG_DMABUF_MR: "REG_DMABUF_MR",
		abi.UVERBS_METHOD_REG_MR:        "REG_MR",
	},
	abi.UVERBS_OBJECT_COUNTERS: {
		abi.UVERBS_METHOD_COUNTERS_CREATE:  "CREATE",
		abi.UVERBS_METHOD_COUNTERS_DESTROY: "DESTROY",
		abi.UVERBS_METHOD_COUNTERS_READ:    "READ",
	},
	abi.UVERBS_OBJECT_MW:          {abi.UVERBS_METHOD_MW_DESTROY: "DESTROY"},
	abi.UVERBS_OBJECT_XRCD:        {abi.UVERBS_METHOD_XRCD_DESTROY: "DESTROY"},
	abi.UVERBS_OBJECT_AH:          {abi.UVERBS_METHOD_AH_DESTROY: "DESTROY"},
	abi.UVERBS_OBJECT_RWQ_IND_TBL: {abi.UVERBS_METHOD_RWQ_IND_TBL_DESTROY: "DESTROY"},
	abi.UVERBS_OBJECT_FLOW:        {abi.UVERBS_METHOD_FLOW_DESTROY: "DESTROY"},
	abi.UVERBS_OBJECT_ASYNC_EVENT: {abi.UVERBS_METHOD_ASYNC_EVENT_ALLOC: "ALLOC"},
	abi.UVERBS_OBJECT_COMP_CNTR: {
		abi.UVERBS_METHOD_COMP_CNTR_CREATE:  "CREATE",
		abi.UVERBS_METHOD_COMP_CNTR_DESTROY: "DESTROY",
		abi.UVERBS_METHOD_COMP_CNTR_MODIFY:  "MODIFY",
		abi.UVERBS_METHOD_COMP_CNTR_READ:    "READ",
	},
}

// VerbsCommand implements Names.
func (ABINames) VerbsCommand(cmd uint32) string { return verbsCmdNames[cmd] }

// VerbsExCommand implements Names.
func (ABINames) VerbsExCommand(cmd uint32) string { return verbsExCmdNames[cmd] }

// IoctlObject implements Names.
func (ABINames) IoctlObject(obj uint16) string { return ioctlObjectNames[obj] }

// IoctlMethod implements Names.
func (ABINames) IoctlMethod(obj, method uint16) string { return ioctlMethodNames[obj][method] }

// UCMCommand implements Names with abi.UCMCmdString.
func (ABINames) UCMCommand(cmd uint32) string {
	return trimKnown(abi.UCMCmdString(cmd), "RDMA_USER_CM_CMD_")
}

// CMEvent implements Names with abi.CMEventType.String.
func (ABINames) CMEvent(ev uint32) string {
	return trimKnown(abi.CMEventType(ev).String(), "RDMA_CM_EVENT_")
}

// trimKnown strips prefix from an abi name, and returns "" for abi's
// spelling of an unknown number ("PREFIX(99)").
func trimKnown(s, prefix string) string {
	s, ok := strings.CutPrefix(s, prefix)
	if !ok || strings.ContainsAny(s, "()") {
		return ""
	}
	return s
}
