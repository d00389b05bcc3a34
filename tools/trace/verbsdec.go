// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/sysfs"
)

// The decoders of the uverbs write() commands: request bodies and responses,
// by command. The ioctl path uses the same tables for UVERBS_METHOD_INVOKE_WRITE
// (its UVERBS_ATTR_CORE_IN is the body, UVERBS_ATTR_CORE_OUT the response).

var qpStateNames = map[uint8]string{
	abi.IB_QPS_RESET: "RESET", abi.IB_QPS_INIT: "INIT", abi.IB_QPS_RTR: "RTR", abi.IB_QPS_RTS: "RTS",
	abi.IB_QPS_SQD: "SQD", abi.IB_QPS_SQE: "SQE", abi.IB_QPS_ERR: "ERR",
}

// qpTypeNames spells the QP types as libibverbs does (IBV_QPT_XRC_SEND is the
// kernel's IB_QPT_XRC_INI, IBV_QPT_XRC_RECV its IB_QPT_XRC_TGT).
var qpTypeNames = map[uint8]string{
	abi.IB_QPT_RC: "RC", abi.IB_QPT_UC: "UC", abi.IB_QPT_UD: "UD", abi.IB_QPT_GSI: "GSI",
	abi.IB_QPT_RAW_PACKET: "RAW_PACKET", abi.IB_QPT_XRC_INI: "XRC_SEND", abi.IB_QPT_XRC_TGT: "XRC_RECV",
	abi.IB_QPT_DRIVER: "DRIVER",
}

var srqTypeNames = map[uint8]string{
	abi.IB_UVERBS_SRQT_BASIC: "BASIC", abi.IB_UVERBS_SRQT_XRC: "XRC", abi.IB_UVERBS_SRQT_TM: "TM",
}

var portStateNames = map[uint8]string{
	abi.IB_PORT_NOP: "NOP", abi.IB_PORT_DOWN: "DOWN", abi.IB_PORT_INIT: "INIT", abi.IB_PORT_ARMED: "ARMED",
	abi.IB_PORT_ACTIVE: "ACTIVE", abi.IB_PORT_ACTIVE_DEFER: "ACTIVE_DEFER",
}

var linkLayerNames = map[uint8]string{
	abi.IB_LINK_LAYER_UNSPECIFIED: "UNSPECIFIED", abi.IB_LINK_LAYER_INFINIBAND: "InfiniBand",
	abi.IB_LINK_LAYER_ETHERNET: "Ethernet",
}

var mtuNames = map[uint8]string{
	abi.IB_MTU_256: "256", abi.IB_MTU_512: "512", abi.IB_MTU_1024: "1024", abi.IB_MTU_2048: "2048",
	abi.IB_MTU_4096: "4096",
}

func nameOr(m map[uint8]string, v uint8) string {
	if s, ok := m[v]; ok {
		return s
	}
	return fmt.Sprint(v)
}

func hex32(k string, v uint32) Field { return Field{k, fmt.Sprintf("%#x", v)} }

// gidString shows a GID as an IPv6 address (RoCE GIDs of IPv4 addresses as
// ::ffff:a.b.c.d).
func gidString(g [16]byte) string { return netip.AddrFrom16(g).String() }

// qpCapFields lists the capabilities of a QP creation.
func qpCapFields(sendWR, recvWR, sendSGE, recvSGE, inline uint32) []Field {
	return []Field{u("max_send_wr", sendWR), u("max_recv_wr", recvWR), u("max_send_sge", sendSGE),
		u("max_recv_sge", recvSGE), u("max_inline", inline)}
}

// verbsReq decodes the body (after the headers) of plain write() commands.
var verbsReq = map[uint32]func(body []byte) []Field{
	abi.IB_USER_VERBS_CMD_QUERY_PORT: decoder(func(c *abi.QueryPort) []Field {
		return []Field{{"port", uint64(c.PortNum)}}
	}),
	abi.IB_USER_VERBS_CMD_DEALLOC_PD: decoder(func(c *abi.DeallocPD) []Field {
		return []Field{u("pd", c.PDHandle)}
	}),
	abi.IB_USER_VERBS_CMD_REG_MR: decoder(func(c *abi.RegMR) []Field {
		return []Field{u("pd", c.PDHandle), {"len", c.Length}, {"access", fmt.Sprintf("%#x", c.AccessFlags)}}
	}),
	abi.IB_USER_VERBS_CMD_REREG_MR: decoder(func(c *abi.ReregMR) []Field {
		return []Field{u("mr", c.MRHandle), hex32("flags", c.Flags), u("pd", c.PDHandle), {"len", c.Length},
			hex32("access", c.AccessFlags)}
	}),
	abi.IB_USER_VERBS_CMD_DEREG_MR: decoder(func(c *abi.DeregMR) []Field {
		return []Field{u("mr", c.MRHandle)}
	}),
	abi.IB_USER_VERBS_CMD_ALLOC_MW: decoder(func(c *abi.AllocMW) []Field {
		return []Field{u("pd", c.PDHandle), {"type", uint64(c.MWType)}}
	}),
	abi.IB_USER_VERBS_CMD_DEALLOC_MW: decoder(func(c *abi.DeallocMW) []Field {
		return []Field{u("mw", c.MWHandle)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_CQ: decoder(func(c *abi.CreateCQ) []Field {
		return []Field{u("cqe", c.CQE), {"comp_channel", int64(c.CompChannel)}}
	}),
	abi.IB_USER_VERBS_CMD_RESIZE_CQ: decoder(func(c *abi.ResizeCQ) []Field {
		return []Field{u("cq", c.CQHandle), u("cqe", c.CQE)}
	}),
	abi.IB_USER_VERBS_CMD_DESTROY_CQ: decoder(func(c *abi.DestroyCQ) []Field {
		return []Field{u("cq", c.CQHandle)}
	}),
	abi.IB_USER_VERBS_CMD_POLL_CQ: decoder(func(c *abi.PollCQ) []Field {
		return []Field{u("cq", c.CQHandle), u("ne", c.NE)}
	}),
	abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: decoder(func(c *abi.ReqNotifyCQ) []Field {
		return []Field{u("cq", c.CQHandle), u("solicited", c.SolicitedOnly)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_QP: decoder(func(c *abi.CreateQP) []Field {
		f := []Field{{"type", nameOr(qpTypeNames, c.QPType)}, u("pd", c.PDHandle), u("send_cq", c.SendCQHandle),
			u("recv_cq", c.RecvCQHandle)}
		if c.IsSRQ != 0 {
			f = append(f, u("srq", c.SRQHandle))
		}
		return append(f, qpCapFields(c.MaxSendWR, c.MaxRecvWR, c.MaxSendSGE, c.MaxRecvSGE, c.MaxInlineData)...)
	}),
	abi.IB_USER_VERBS_CMD_OPEN_QP: decoder(func(c *abi.OpenQP) []Field {
		return []Field{{"type", nameOr(qpTypeNames, c.QPType)}, u("xrcd", c.PDHandle), u("qpn", c.QPN)}
	}),
	abi.IB_USER_VERBS_CMD_QUERY_QP: decoder(func(c *abi.QueryQP) []Field {
		return []Field{u("qp", c.QPHandle), hex32("mask", c.AttrMask)}
	}),
	abi.IB_USER_VERBS_CMD_MODIFY_QP: modifyQP,
	abi.IB_USER_VERBS_CMD_DESTROY_QP: decoder(func(c *abi.DestroyQP) []Field {
		return []Field{u("qp", c.QPHandle)}
	}),
	abi.IB_USER_VERBS_CMD_POST_SEND: decoder(func(c *abi.PostSend) []Field {
		return []Field{u("qp", c.QPHandle), u("wr_count", c.WrCount)}
	}),
	abi.IB_USER_VERBS_CMD_POST_RECV: decoder(func(c *abi.PostRecv) []Field {
		return []Field{u("qp", c.QPHandle), u("wr_count", c.WrCount)}
	}),
	abi.IB_USER_VERBS_CMD_POST_SRQ_RECV: decoder(func(c *abi.PostSRQRecv) []Field {
		return []Field{u("srq", c.SRQHandle), u("wr_count", c.WrCount)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_AH: decoder(func(c *abi.CreateAH) []Field {
		f := []Field{u("pd", c.PDHandle)}
		if c.Attr.IsGlobal != 0 {
			return append(f, Field{"dgid", gidString(c.Attr.GRH.DGID)}, Field{"sgid_index", uint64(c.Attr.GRH.SGIDIndex)})
		}
		return append(f, Field{"dlid", uint64(c.Attr.DLID)})
	}),
	abi.IB_USER_VERBS_CMD_DESTROY_AH: decoder(func(c *abi.DestroyAH) []Field {
		return []Field{u("ah", c.AHHandle)}
	}),
	abi.IB_USER_VERBS_CMD_ATTACH_MCAST: decoder(func(c *abi.AttachMcast) []Field {
		return []Field{u("qp", c.QPHandle), {"gid", gidString(c.GID)}, {"mlid", uint64(c.MLID)}}
	}),
	abi.IB_USER_VERBS_CMD_DETACH_MCAST: decoder(func(c *abi.DetachMcast) []Field {
		return []Field{u("qp", c.QPHandle), {"gid", gidString(c.GID)}, {"mlid", uint64(c.MLID)}}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_SRQ: decoder(func(c *abi.CreateSRQ) []Field {
		return []Field{u("pd", c.PDHandle), u("max_wr", c.MaxWR), u("max_sge", c.MaxSGE), u("limit", c.SRQLimit)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_XSRQ: decoder(func(c *abi.CreateXSRQ) []Field {
		return []Field{{"type", nameOr(srqTypeNames, uint8(c.SRQType))}, u("pd", c.PDHandle), u("xrcd", c.XRCDHandle),
			u("cq", c.CQHandle), u("max_wr", c.MaxWR), u("max_sge", c.MaxSGE), u("limit", c.SRQLimit)}
	}),
	abi.IB_USER_VERBS_CMD_MODIFY_SRQ: decoder(func(c *abi.ModifySRQ) []Field {
		return []Field{u("srq", c.SRQHandle), hex32("mask", c.AttrMask), u("max_wr", c.MaxWR), u("limit", c.SRQLimit)}
	}),
	abi.IB_USER_VERBS_CMD_QUERY_SRQ: decoder(func(c *abi.QuerySRQ) []Field {
		return []Field{u("srq", c.SRQHandle)}
	}),
	abi.IB_USER_VERBS_CMD_DESTROY_SRQ: decoder(func(c *abi.DestroySRQ) []Field {
		return []Field{u("srq", c.SRQHandle)}
	}),
	abi.IB_USER_VERBS_CMD_OPEN_XRCD: decoder(func(c *abi.OpenXRCD) []Field {
		return []Field{{"fd", int64(int32(c.FD))}, hex32("oflags", c.OFlags)}
	}),
	abi.IB_USER_VERBS_CMD_CLOSE_XRCD: decoder(func(c *abi.CloseXRCD) []Field {
		return []Field{u("xrcd", c.XRCDHandle)}
	}),
}

// whole makes a table entry like decoder for a struct whose fields are shown
// only when all of it was read (a write() response is cut at recRespLen).
func whole[T any](fields func(*T) []Field) func([]byte) []Field {
	return func(b []byte) []Field {
		var v T
		if len(b) < binary.Size(v) {
			return nil
		}
		decode(b, &v)
		return fields(&v)
	}
}

// modifyQP shows the handle, the mask and every attribute the mask selects
// that the record holds (an extended command's data ends before the port,
// timeout and retry counts).
var modifyQP = func(b []byte) []Field {
	var c abi.ModifyQP
	decode(b, &c)
	f := []Field{u("qp", c.QPHandle), hex32("mask", c.AttrMask)}
	m := c.AttrMask
	if len(b) < modifyQPEnd {
		m &^= abi.IB_QP_PORT | abi.IB_QP_TIMEOUT | abi.IB_QP_RETRY_CNT | abi.IB_QP_RNR_RETRY
	}
	add := func(bit uint32, k string, v any) {
		if m&bit != 0 {
			f = append(f, Field{k, v})
		}
	}
	add(abi.IB_QP_STATE, "state", nameOr(qpStateNames, c.QPState))
	add(abi.IB_QP_CUR_STATE, "cur_state", nameOr(qpStateNames, c.CurQPState))
	add(abi.IB_QP_ACCESS_FLAGS, "access", fmt.Sprintf("%#x", c.QPAccessFlags))
	add(abi.IB_QP_PKEY_INDEX, "pkey_index", uint64(c.PkeyIndex))
	add(abi.IB_QP_PORT, "port", uint64(c.PortNum))
	add(abi.IB_QP_QKEY, "qkey", fmt.Sprintf("%#x", c.Qkey))
	if m&abi.IB_QP_AV != 0 {
		if c.Dest.IsGlobal != 0 {
			f = append(f, Field{"dgid", gidString(c.Dest.DGID)}, Field{"sgid_index", uint64(c.Dest.SGIDIndex)},
				Field{"hop_limit", uint64(c.Dest.HopLimit)})
		} else {
			f = append(f, Field{"dlid", uint64(c.Dest.DLID)})
		}
	}
	add(abi.IB_QP_PATH_MTU, "mtu", nameOr(mtuNames, c.PathMTU))
	add(abi.IB_QP_TIMEOUT, "timeout", uint64(c.Timeout))
	add(abi.IB_QP_RETRY_CNT, "retry_cnt", uint64(c.RetryCnt))
	add(abi.IB_QP_RNR_RETRY, "rnr_retry", uint64(c.RnrRetry))
	add(abi.IB_QP_RQ_PSN, "rq_psn", uint64(c.RqPSN))
	add(abi.IB_QP_MAX_QP_RD_ATOMIC, "max_rd_atomic", uint64(c.MaxRdAtomic))
	add(abi.IB_QP_MIN_RNR_TIMER, "min_rnr_timer", uint64(c.MinRnrTimer))
	add(abi.IB_QP_SQ_PSN, "sq_psn", uint64(c.SqPSN))
	add(abi.IB_QP_MAX_DEST_RD_ATOMIC, "max_dest_rd_atomic", uint64(c.MaxDestRdAtomic))
	add(abi.IB_QP_DEST_QPN, "dest_qpn", uint64(c.DestQPNum))
	return f
}

// verbsExReq decodes the body (after both headers) of extended commands.
var verbsExReq = map[uint32]func(body []byte) []Field{
	abi.IB_USER_VERBS_EX_CMD_MODIFY_QP: modifyQP, // ExModifyQP starts with ModifyQP
	abi.IB_USER_VERBS_EX_CMD_CREATE_CQ: decoder(func(c *abi.ExCreateCQ) []Field {
		f := []Field{u("cqe", c.CQE), {"comp_channel", int64(c.CompChannel)}}
		if c.Flags != 0 {
			f = append(f, hex32("flags", c.Flags))
		}
		return f
	}),
	abi.IB_USER_VERBS_EX_CMD_CREATE_QP: decoder(func(c *abi.ExCreateQP) []Field {
		f := []Field{{"type", nameOr(qpTypeNames, c.QPType)}, u("pd", c.PDHandle), u("send_cq", c.SendCQHandle),
			u("recv_cq", c.RecvCQHandle)}
		if c.IsSRQ != 0 {
			f = append(f, u("srq", c.SRQHandle))
		}
		f = append(f, qpCapFields(c.MaxSendWR, c.MaxRecvWR, c.MaxSendSGE, c.MaxRecvSGE, c.MaxInlineData)...)
		if c.CreateFlags != 0 {
			f = append(f, hex32("flags", c.CreateFlags))
		}
		return f
	}),
	abi.IB_USER_VERBS_EX_CMD_MODIFY_CQ: decoder(func(c *abi.ExModifyCQ) []Field {
		return []Field{u("cq", c.CQHandle), u("count", uint32(c.Attr.CQCount)), u("period", uint32(c.Attr.CQPeriod))}
	}),
}

// verbsResp decodes responses of plain commands.
var verbsResp = map[uint32]func(resp []byte) []Field{
	abi.IB_USER_VERBS_CMD_GET_CONTEXT: decoder(func(r *abi.GetContextResp) []Field {
		return []Field{u("async_fd", r.AsyncFD), u("num_comp_vectors", r.NumCompVectors)}
	}),
	abi.IB_USER_VERBS_CMD_QUERY_PORT: queryPortResp,
	abi.IB_USER_VERBS_CMD_QUERY_DEVICE: func(b []byte) []Field {
		// The record holds the head of ib_uverbs_query_device_resp (176 bytes).
		var r abi.QueryDeviceResp
		if len(b) < queryDeviceMaxPDEnd {
			return nil
		}
		decode(b, &r)
		return []Field{{"node_guid", sysfs.GUID(binary.BigEndian.Uint64(binary.NativeEndian.AppendUint64(nil, r.NodeGUID))).String()},
			u("max_qp", r.MaxQP), u("max_qp_wr", r.MaxQPWR), u("max_sge", r.MaxSGE), u("max_cq", r.MaxCQ),
			u("max_cqe", r.MaxCQE), u("max_mr", r.MaxMR), u("max_pd", r.MaxPD)}
	},
	abi.IB_USER_VERBS_CMD_ALLOC_PD: decoder(func(r *abi.AllocPDResp) []Field {
		return []Field{u("pd", r.PDHandle)}
	}),
	abi.IB_USER_VERBS_CMD_REG_MR: decoder(func(r *abi.RegMRResp) []Field {
		return []Field{u("mr", r.MRHandle), hex32("lkey", r.LKey), hex32("rkey", r.RKey)}
	}),
	abi.IB_USER_VERBS_CMD_REREG_MR: decoder(func(r *abi.ReregMRResp) []Field {
		return []Field{hex32("lkey", r.LKey), hex32("rkey", r.RKey)}
	}),
	abi.IB_USER_VERBS_CMD_ALLOC_MW: decoder(func(r *abi.AllocMWResp) []Field {
		return []Field{u("mw", r.MWHandle), hex32("rkey", r.RKey)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL: decoder(func(r *abi.CreateCompChannelResp) []Field {
		return []Field{u("fd", r.FD)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_CQ: createCQResp,
	abi.IB_USER_VERBS_CMD_RESIZE_CQ: decoder(func(r *abi.ResizeCQResp) []Field {
		return []Field{u("cqe", r.CQE)}
	}),
	abi.IB_USER_VERBS_CMD_DESTROY_CQ: decoder(func(r *abi.DestroyCQResp) []Field {
		return []Field{u("comp_events", r.CompEventsReported), u("async_events", r.AsyncEventsReported)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_QP: createQPResp,
	abi.IB_USER_VERBS_CMD_OPEN_QP:   createQPResp,
	abi.IB_USER_VERBS_CMD_QUERY_QP: whole(func(r *abi.QueryQPResp) []Field {
		return []Field{{"state", nameOr(qpStateNames, r.QPState)}, {"mtu", nameOr(mtuNames, r.PathMTU)},
			u("dest_qpn", r.DestQPNum), u("sq_psn", r.SqPSN), u("rq_psn", r.RqPSN)}
	}),
	abi.IB_USER_VERBS_CMD_DESTROY_QP: decoder(func(r *abi.DestroyQPResp) []Field {
		return []Field{u("events", r.EventsReported)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_AH: decoder(func(r *abi.CreateAHResp) []Field {
		return []Field{u("ah", r.AHHandle)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_SRQ:  createSRQResp,
	abi.IB_USER_VERBS_CMD_CREATE_XSRQ: createSRQResp,
	abi.IB_USER_VERBS_CMD_QUERY_SRQ: decoder(func(r *abi.QuerySRQResp) []Field {
		return []Field{u("max_wr", r.MaxWR), u("max_sge", r.MaxSGE), u("limit", r.SRQLimit)}
	}),
	abi.IB_USER_VERBS_CMD_DESTROY_SRQ: decoder(func(r *abi.DestroySRQResp) []Field {
		return []Field{u("events", r.EventsReported)}
	}),
	abi.IB_USER_VERBS_CMD_OPEN_XRCD: decoder(func(r *abi.OpenXRCDResp) []Field {
		return []Field{u("xrcd", r.XRCDHandle)}
	}),
}

var createCQResp = decoder(func(r *abi.CreateCQResp) []Field {
	return []Field{u("cq", r.CQHandle), u("cqe", r.CQE)}
})

var createQPResp = decoder(func(r *abi.CreateQPResp) []Field {
	return []Field{u("qp", r.QPHandle), u("qpn", r.QPN)}
})

var createSRQResp = decoder(func(r *abi.CreateSRQResp) []Field {
	return []Field{u("srq", r.SRQHandle), u("max_wr", r.MaxWR), u("max_sge", r.MaxSGE), u("srqn", r.SRQN)}
})

// queryPortResp decodes ib_uverbs_query_port_resp (the write() response, and
// the head of the ioctl's ib_uverbs_query_port_resp_ex).
var queryPortResp = whole(func(r *abi.QueryPortResp) []Field {
	return []Field{{"state", nameOr(portStateNames, r.State)}, {"mtu", nameOr(mtuNames, r.ActiveMTU)},
		{"link_layer", nameOr(linkLayerNames, r.LinkLayer)}, u("gid_tbl_len", r.GidTblLen), {"lid", uint64(r.LID)}}
})

// verbsExResp decodes responses of extended commands (their structs start
// with the plain response as Base).
var verbsExResp = map[uint32]func(resp []byte) []Field{
	abi.IB_USER_VERBS_EX_CMD_CREATE_CQ: createCQResp,
	abi.IB_USER_VERBS_EX_CMD_CREATE_QP: createQPResp,
}
