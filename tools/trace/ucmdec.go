// Copyright 2026 The rdmago Authors.

package trace

import (
	"syscall"

	"github.com/rdmago/rdmago/internal/abi"
)

// The decoders of rdma_cm write() commands beyond the first few (ucmReq in
// format.go holds them all): addresses, connection parameters, requested QP
// states. The ucma probe keeps the first ucmDataMax bytes of a command, which
// covers every field shown.

func addrField(f []Field, key string, b []byte) []Field {
	if s := sockaddr(b); s != "" {
		return append(f, Field{key, s})
	}
	return f
}

// connParamFields lists what an rdma_conn_param asks for.
func connParamFields(p *abi.UCMConnParam) []Field {
	f := []Field{u("qp_num", p.QPNum)}
	if p.QKey != 0 {
		f = append(f, hex32("qkey", p.QKey))
	}
	f = append(f, Field{"private_data_len", uint64(p.PrivateDataLen)},
		Field{"responder_resources", uint64(p.ResponderResources)}, Field{"initiator_depth", uint64(p.InitiatorDepth)},
		Field{"retry_count", uint64(p.RetryCount)}, Field{"rnr_retry_count", uint64(p.RNRRetryCount)})
	if p.FlowControl != 0 {
		f = append(f, Field{"flow_control", uint64(p.FlowControl)})
	}
	if p.SRQ != 0 {
		f = append(f, Field{"srq", uint64(p.SRQ)})
	}
	return f
}

var ucmQueryNames = map[uint8]string{
	abi.RDMA_USER_CM_QUERY_ADDR: "ADDR", abi.RDMA_USER_CM_QUERY_PATH: "PATH", abi.RDMA_USER_CM_QUERY_GID: "GID",
	abi.RDMA_USER_CM_QUERY_IB_SERVICE: "IB_SERVICE",
}

var mcJoinNames = map[uint8]string{
	abi.RDMA_MC_JOIN_FLAG_FULLMEMBER: "FULLMEMBER", abi.RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER: "SENDONLY_FULLMEMBER",
}

var (
	ucmBind = decoder(func(c *abi.UCMBind) []Field {
		return addrField([]Field{u("id", c.ID)}, "addr", c.Addr[:])
	})
	ucmBindIP = decoder(func(c *abi.UCMBindIP) []Field {
		return addrField([]Field{u("id", c.ID)}, "addr", c.Addr[:])
	})
	ucmResolveIP = decoder(func(c *abi.UCMResolveIP) []Field {
		f := addrField([]Field{u("id", c.ID)}, "src", c.SrcAddr[:])
		return append(addrField(f, "dst", c.DstAddr[:]), u("timeout_ms", c.TimeoutMS))
	})
	ucmResolveAddr = decoder(func(c *abi.UCMResolveAddr) []Field {
		f := []Field{u("id", c.ID)}
		if c.SrcSize != 0 {
			f = addrField(f, "src", c.SrcAddr[:])
		}
		return append(addrField(f, "dst", c.DstAddr[:]), u("timeout_ms", c.TimeoutMS))
	})
	ucmQuery = decoder(func(c *abi.UCMQuery) []Field {
		return []Field{u("id", c.ID), {"option", nameOr(ucmQueryNames, uint8(c.Option))}}
	})
	ucmConnect = func(b []byte) []Field {
		var c abi.UCMConnect
		decode(b, &c)
		if len(b) < ucmConnectIDEnd {
			return []Field{u("qp_num", c.ConnParam.QPNum)} // a record of the first bytes only
		}
		return append([]Field{u("id", c.ID)}, connParamFields(&c.ConnParam)...)
	}
	ucmAccept = func(b []byte) []Field {
		var c abi.UCMAccept
		decode(b, &c)
		if len(b) < ucmAcceptIDEnd {
			return []Field{u("qp_num", c.ConnParam.QPNum)}
		}
		return append([]Field{u("id", c.ID)}, connParamFields(&c.ConnParam)...)
	}
	ucmReject = decoder(func(c *abi.UCMReject) []Field {
		return []Field{u("id", c.ID), {"reason", uint64(c.Reason)}, {"private_data_len", uint64(c.PrivateDataLen)}}
	})
	ucmInitQPAttr = decoder(func(c *abi.UCMInitQPAttr) []Field {
		return []Field{u("id", c.ID), {"state", nameOr(qpStateNames, uint8(c.QPState))}}
	})
	ucmLeaveMcast = decoder(func(c *abi.UCMDestroyID) []Field { // struct rdma_ucm_destroy_id
		return []Field{u("id", c.ID)}
	})
	ucmNotify = decoder(func(c *abi.UCMNotify) []Field {
		return []Field{u("id", c.ID), u("event", c.Event)}
	})
	ucmJoinIPMcast = decoder(func(c *abi.UCMJoinIPMcast) []Field {
		return addrField([]Field{u("id", c.ID)}, "addr", c.Addr[:])
	})
	ucmJoinMcast = decoder(func(c *abi.UCMJoinMcast) []Field {
		f := addrField([]Field{u("id", c.ID)}, "addr", c.Addr[:])
		return append(f, Field{"join", nameOr(mcJoinNames, uint8(c.JoinFlags))})
	})
	ucmSetOption = decoder(func(c *abi.UCMSetOption) []Field {
		return []Field{u("id", c.ID), u("level", c.Level), u("optname", c.OptName), u("optlen", c.OptLen)}
	})
	ucmMigrateID = decoder(func(c *abi.UCMMigrateID) []Field {
		return []Field{u("id", c.ID), u("fd", c.FD)}
	})
)

// ucmInitQPAttrResp decodes the head of the ib_uverbs_qp_attr INIT_QP_ATTR
// answers: the attributes the following MODIFY_QP is to set.
var ucmInitQPAttrResp = decoder(func(r *abi.QPAttr) []Field {
	return []Field{hex32("mask", r.QPAttrMask), {"state", nameOr(qpStateNames, uint8(r.QPState))}}
})

// ucmEventStatus names a negative CM event status as the errno it is.
func ucmEventStatus(f []Field, status int32) []Field {
	if status < 0 && status > -4096 {
		f = append(f, Field{"err", errnoName(syscall.Errno(-status))})
	}
	return f
}
