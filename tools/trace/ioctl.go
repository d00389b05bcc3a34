// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmago/rdmago/internal/abi"
)

// The decoders of RDMA_VERBS_IOCTL methods (include/uapi/rdma/ib_user_ioctl_cmds.h),
// by object and method: they read the attribute array and buffers the ioctl
// programs recorded (Event.IoctlAttrs, Event.IoctlBufs).

// ioctlAttrs gives a method's attributes by id.
type ioctlAttrs struct {
	attrs []abi.IoctlAttr
	bufs  [][]byte
}

func (a ioctlAttrs) index(id uint16) int {
	for i := range a.attrs {
		if a.attrs[i].AttrID == id {
			return i
		}
	}
	return -1
}

// in returns the bytes of input attribute id: inline (Len <= 8) from Data,
// longer ones from the buffer read at entry.
func (a ioctlAttrs) in(id uint16) ([]byte, bool) {
	i := a.index(id)
	if i < 0 {
		return nil, false
	}
	at := a.attrs[i]
	if at.Len <= 8 {
		var b [8]byte
		binary.NativeEndian.PutUint64(b[:], at.Data)
		return b[:at.Len], true
	}
	return a.bufs[i], a.bufs[i] != nil
}

// out returns the buffer of output attribute id the kernel wrote.
func (a ioctlAttrs) out(id uint16) ([]byte, bool) {
	i := a.index(id)
	if i < 0 || a.bufs[i] == nil || a.attrs[i].Flags&abi.UVERBS_ATTR_F_VALID_OUTPUT == 0 {
		return nil, false
	}
	return a.bufs[i], true
}

// uint reads b (1, 2, 4 or 8 bytes, the host's order) as an unsigned number.
func uintOf(b []byte) uint64 {
	var v [8]byte
	copy(v[:], b)
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.NativeEndian.Uint16(v[:]))
	case 4:
		return uint64(binary.NativeEndian.Uint32(v[:]))
	}
	return binary.NativeEndian.Uint64(v[:])
}

// fields collects decoded attributes.
type fields []Field

// handle adds attribute id's object handle (IDR) or fd: the id the caller
// gave, or for a new object the one the kernel wrote back.
func (f *fields) handle(a ioctlAttrs, key string, id uint16) {
	if i := a.index(id); i >= 0 {
		*f = append(*f, Field{key, a.attrs[i].Data})
	}
}

// fd is handle for fd attributes, which may be -1.
func (f *fields) fd(a ioctlAttrs, key string, id uint16) {
	if i := a.index(id); i >= 0 {
		*f = append(*f, Field{key, int64(a.attrs[i].Data)})
	}
}

// num adds input attribute id as a number.
func (f *fields) num(a ioctlAttrs, key string, id uint16) {
	if b, ok := a.in(id); ok {
		*f = append(*f, Field{key, uintOf(b)})
	}
}

// hex adds input attribute id as a hexadecimal number, when not zero.
func (f *fields) hex(a ioctlAttrs, key string, id uint16) {
	if b, ok := a.in(id); ok && uintOf(b) != 0 {
		*f = append(*f, Field{key, fmt.Sprintf("%#x", uintOf(b))})
	}
}

// outNum adds output attribute id as a number.
func (f *fields) outNum(a ioctlAttrs, key string, id uint16) {
	if b, ok := a.out(id); ok {
		*f = append(*f, Field{key, uintOf(b)})
	}
}

// outHex adds output attribute id as a hexadecimal number.
func (f *fields) outHex(a ioctlAttrs, key string, id uint16) {
	if b, ok := a.out(id); ok {
		*f = append(*f, Field{key, fmt.Sprintf("%#x", uintOf(b))})
	}
}

// named adds input attribute id through a table of names.
func (f *fields) named(a ioctlAttrs, key string, id uint16, names map[uint8]string) {
	if b, ok := a.in(id); ok {
		*f = append(*f, Field{key, nameOr(names, uint8(uintOf(b)))})
	}
}

// ioctlMethod decodes one method: the arguments, and the response (asked
// for only when the call succeeded).
type ioctlMethod func(a ioctlAttrs, ok bool) (args, resp []Field)

func ioctlKey(obj, method uint16) uint32 { return uint32(obj)<<16 | uint32(method) }

// destroyMethod decodes the destroy methods whose only attribute is the handle.
func destroyMethod(key string, id uint16) ioctlMethod {
	return func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f fields
		f.handle(a, key, id)
		return f, nil
	}
}

// destroyEvents decodes a destroy method with an events-reported response.
func destroyEvents(key string, id, respID uint16) ioctlMethod {
	return func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f fields
		f.handle(a, key, id)
		if b, has := a.out(respID); has && ok {
			resp = []Field{u("events", uint32(uintOf(b[:min(4, len(b))])))}
		}
		return f, resp
	}
}

func getContext(numCV, core uint16) ioctlMethod {
	return func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var r fields
		r.outNum(a, "num_comp_vectors", numCV)
		r.outHex(a, "core_support", core)
		return nil, r
	}
}

// ioctlMethods are the methods decoded beyond their names.
var ioctlMethods = map[uint32]ioctlMethod{
	ioctlKey(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT): getContext(
		abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, abi.UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT),
	ioctlKey(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_CONTEXT): getContext(
		abi.UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, abi.UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT),
	ioctlKey(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f fields
		f.num(a, "port", abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM)
		if b, has := a.out(abi.UVERBS_ATTR_QUERY_PORT_RESP); has {
			resp = queryPortResp(b) // ib_uverbs_query_port_resp_ex starts with it
		}
		return f, resp
	},
	ioctlKey(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT_SPEED): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.num(a, "port", abi.UVERBS_ATTR_QUERY_PORT_SPEED_PORT_NUM)
		r.outNum(a, "speed", abi.UVERBS_ATTR_QUERY_PORT_SPEED_RESP)
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.num(a, "entry_size", abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE)
		f.hex(a, "flags", abi.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS)
		r.outNum(a, "entries", abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES)
		n := uint64(0)
		if len(r) > 0 {
			n = r[0].Val.(uint64)
		}
		size := uint64(sizeofGIDEntry)
		if b, has := a.in(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE); has && uintOf(b) >= uint64(sizeofGIDEntry) {
			size = uintOf(b)
		}
		// The entries the record holds (the first ioctlSlotLen bytes).
		if b, has := a.out(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES); has {
			for i := uint64(0); i < n && (i+1)*size <= uint64(len(b)); i++ {
				r = append(r, gidEntryField(b[i*size:]))
			}
		}
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_ENTRY): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f fields
		f.num(a, "port", abi.UVERBS_ATTR_QUERY_GID_ENTRY_PORT)
		f.num(a, "index", abi.UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX)
		f.hex(a, "flags", abi.UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS)
		if b, has := a.out(abi.UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY); has && len(b) >= sizeofGIDEntry {
			resp = []Field{gidEntryField(b)}
		}
		return f, resp
	},
	ioctlKey(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INFO_HANDLES): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.num(a, "object", abi.UVERBS_ATTR_INFO_OBJECT_ID)
		r.outNum(a, "total", abi.UVERBS_ATTR_INFO_TOTAL_HANDLES)
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_ASYNC_EVENT, abi.UVERBS_METHOD_ASYNC_EVENT_ALLOC): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var r fields
		r.fd(a, "fd", abi.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE)
		return nil, r
	},
	ioctlKey(abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.num(a, "cqe", abi.UVERBS_ATTR_CREATE_CQ_CQE)
		f.fd(a, "comp_channel", abi.UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL)
		f.num(a, "comp_vector", abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR)
		f.hex(a, "flags", abi.UVERBS_ATTR_CREATE_CQ_FLAGS)
		r.handle(a, "cq", abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
		r.outNum(a, "cqe", abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE)
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_DESTROY): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f fields
		f.handle(a, "cq", abi.UVERBS_ATTR_DESTROY_CQ_HANDLE)
		if b, has := a.out(abi.UVERBS_ATTR_DESTROY_CQ_RESP); has {
			resp = verbsResp[abi.IB_USER_VERBS_CMD_DESTROY_CQ](b)
		}
		return f, resp
	},
	ioctlKey(abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_CREATE): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.named(a, "type", abi.UVERBS_ATTR_CREATE_QP_TYPE, qpTypeNames)
		f.handle(a, "pd", abi.UVERBS_ATTR_CREATE_QP_PD_HANDLE)
		f.handle(a, "xrcd", abi.UVERBS_ATTR_CREATE_QP_XRCD_HANDLE)
		f.handle(a, "send_cq", abi.UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE)
		f.handle(a, "recv_cq", abi.UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE)
		f.handle(a, "srq", abi.UVERBS_ATTR_CREATE_QP_SRQ_HANDLE)
		f.handle(a, "ind_table", abi.UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE)
		var want abi.QPCap
		if b, has := a.in(abi.UVERBS_ATTR_CREATE_QP_CAP); has && decode(b, &want) {
			f = append(f, qpCapFields(want.MaxSendWR, want.MaxRecvWR, want.MaxSendSGE, want.MaxRecvSGE, want.MaxInlineData)...)
		}
		f.hex(a, "flags", abi.UVERBS_ATTR_CREATE_QP_FLAGS)
		f.num(a, "source_qpn", abi.UVERBS_ATTR_CREATE_QP_SOURCE_QPN)
		r.handle(a, "qp", abi.UVERBS_ATTR_CREATE_QP_HANDLE)
		r.outNum(a, "qpn", abi.UVERBS_ATTR_CREATE_QP_RESP_QP_NUM)
		// The capabilities granted, where they differ from those asked for.
		var got abi.QPCap
		if b, has := a.out(abi.UVERBS_ATTR_CREATE_QP_RESP_CAP); has && decode(b, &got) && got != want {
			r = append(r, qpCapFields(got.MaxSendWR, got.MaxRecvWR, got.MaxSendSGE, got.MaxRecvSGE, got.MaxInlineData)...)
		}
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_DESTROY): destroyEvents("qp",
		abi.UVERBS_ATTR_DESTROY_QP_HANDLE, abi.UVERBS_ATTR_DESTROY_QP_RESP),
	ioctlKey(abi.UVERBS_OBJECT_SRQ, abi.UVERBS_METHOD_SRQ_CREATE): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.named(a, "type", abi.UVERBS_ATTR_CREATE_SRQ_TYPE, srqTypeNames)
		f.handle(a, "pd", abi.UVERBS_ATTR_CREATE_SRQ_PD_HANDLE)
		f.handle(a, "xrcd", abi.UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE)
		f.handle(a, "cq", abi.UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE)
		f.num(a, "max_wr", abi.UVERBS_ATTR_CREATE_SRQ_MAX_WR)
		f.num(a, "max_sge", abi.UVERBS_ATTR_CREATE_SRQ_MAX_SGE)
		f.num(a, "limit", abi.UVERBS_ATTR_CREATE_SRQ_LIMIT)
		f.num(a, "max_num_tags", abi.UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS)
		r.handle(a, "srq", abi.UVERBS_ATTR_CREATE_SRQ_HANDLE)
		r.outNum(a, "max_wr", abi.UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR)
		r.outNum(a, "max_sge", abi.UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE)
		r.outNum(a, "srqn", abi.UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM)
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_SRQ, abi.UVERBS_METHOD_SRQ_DESTROY): destroyEvents("srq",
		abi.UVERBS_ATTR_DESTROY_SRQ_HANDLE, abi.UVERBS_ATTR_DESTROY_SRQ_RESP),
	ioctlKey(abi.UVERBS_OBJECT_WQ, abi.UVERBS_METHOD_WQ_CREATE): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.num(a, "type", abi.UVERBS_ATTR_CREATE_WQ_TYPE)
		f.handle(a, "pd", abi.UVERBS_ATTR_CREATE_WQ_PD_HANDLE)
		f.handle(a, "cq", abi.UVERBS_ATTR_CREATE_WQ_CQ_HANDLE)
		f.num(a, "max_wr", abi.UVERBS_ATTR_CREATE_WQ_MAX_WR)
		f.num(a, "max_sge", abi.UVERBS_ATTR_CREATE_WQ_MAX_SGE)
		r.handle(a, "wq", abi.UVERBS_ATTR_CREATE_WQ_HANDLE)
		r.outNum(a, "wqn", abi.UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM)
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_WQ, abi.UVERBS_METHOD_WQ_DESTROY): destroyEvents("wq",
		abi.UVERBS_ATTR_DESTROY_WQ_HANDLE, abi.UVERBS_ATTR_DESTROY_WQ_RESP),
	ioctlKey(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_REG_MR): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.handle(a, "pd", abi.UVERBS_ATTR_REG_MR_PD_HANDLE)
		f.hex(a, "addr", abi.UVERBS_ATTR_REG_MR_ADDR)
		f.num(a, "len", abi.UVERBS_ATTR_REG_MR_LENGTH)
		f.hex(a, "iova", abi.UVERBS_ATTR_REG_MR_IOVA)
		f.fd(a, "fd", abi.UVERBS_ATTR_REG_MR_FD)
		f.hex(a, "access", abi.UVERBS_ATTR_REG_MR_ACCESS_FLAGS)
		r.handle(a, "mr", abi.UVERBS_ATTR_REG_MR_HANDLE)
		r.outHex(a, "lkey", abi.UVERBS_ATTR_REG_MR_RESP_LKEY)
		r.outHex(a, "rkey", abi.UVERBS_ATTR_REG_MR_RESP_RKEY)
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_REG_DMABUF_MR): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.handle(a, "pd", abi.UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE)
		f.fd(a, "fd", abi.UVERBS_ATTR_REG_DMABUF_MR_FD)
		f.num(a, "offset", abi.UVERBS_ATTR_REG_DMABUF_MR_OFFSET)
		f.num(a, "len", abi.UVERBS_ATTR_REG_DMABUF_MR_LENGTH)
		f.hex(a, "iova", abi.UVERBS_ATTR_REG_DMABUF_MR_IOVA)
		f.hex(a, "access", abi.UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS)
		r.handle(a, "mr", abi.UVERBS_ATTR_REG_DMABUF_MR_HANDLE)
		r.outHex(a, "lkey", abi.UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY)
		r.outHex(a, "rkey", abi.UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY)
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_ADVISE_MR): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f fields
		f.handle(a, "pd", abi.UVERBS_ATTR_ADVISE_MR_PD_HANDLE)
		f.named(a, "advice", abi.UVERBS_ATTR_ADVISE_MR_ADVICE, adviceNames)
		f.hex(a, "flags", abi.UVERBS_ATTR_ADVISE_MR_FLAGS)
		if i := a.index(abi.UVERBS_ATTR_ADVISE_MR_SGE_LIST); i >= 0 {
			f = append(f, u("num_sge", uint32(a.attrs[i].Len)/sizeofSGE))
			// The SGEs the ioctl program read (its slot may hold fewer).
			for j, b := 0, a.bufs[i]; len(b) >= sizeofSGE; j, b = j+1, b[sizeofSGE:] {
				var s abi.SGE
				decode(b[:sizeofSGE], &s)
				f = append(f, Field{fmt.Sprintf("sge%d", j), fmt.Sprintf("%#x+%d/%#x", s.Addr, s.Length, s.LKey)})
			}
		}
		return f, nil
	},
	ioctlKey(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_DM_MR_REG): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.handle(a, "pd", abi.UVERBS_ATTR_REG_DM_MR_PD_HANDLE)
		f.handle(a, "dm", abi.UVERBS_ATTR_REG_DM_MR_DM_HANDLE)
		f.num(a, "offset", abi.UVERBS_ATTR_REG_DM_MR_OFFSET)
		f.num(a, "len", abi.UVERBS_ATTR_REG_DM_MR_LENGTH)
		f.hex(a, "access", abi.UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS)
		r.handle(a, "mr", abi.UVERBS_ATTR_REG_DM_MR_HANDLE)
		r.outHex(a, "lkey", abi.UVERBS_ATTR_REG_DM_MR_RESP_LKEY)
		r.outHex(a, "rkey", abi.UVERBS_ATTR_REG_DM_MR_RESP_RKEY)
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_QUERY_MR): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.handle(a, "mr", abi.UVERBS_ATTR_QUERY_MR_HANDLE)
		r.outHex(a, "lkey", abi.UVERBS_ATTR_QUERY_MR_RESP_LKEY)
		r.outHex(a, "rkey", abi.UVERBS_ATTR_QUERY_MR_RESP_RKEY)
		r.outNum(a, "len", abi.UVERBS_ATTR_QUERY_MR_RESP_LENGTH)
		r.outHex(a, "iova", abi.UVERBS_ATTR_QUERY_MR_RESP_IOVA)
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_DM, abi.UVERBS_METHOD_DM_ALLOC): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var f, r fields
		f.num(a, "len", abi.UVERBS_ATTR_ALLOC_DM_LENGTH)
		f.num(a, "alignment", abi.UVERBS_ATTR_ALLOC_DM_ALIGNMENT)
		r.handle(a, "dm", abi.UVERBS_ATTR_ALLOC_DM_HANDLE)
		return f, r
	},
	ioctlKey(abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_CREATE): func(a ioctlAttrs, ok bool) (args, resp []Field) {
		var r fields
		r.handle(a, "counters", abi.UVERBS_ATTR_CREATE_COUNTERS_HANDLE)
		return nil, r
	},
	ioctlKey(abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_READ): destroyMethod("counters", abi.UVERBS_ATTR_READ_COUNTERS_HANDLE),
	ioctlKey(abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_DESTROY): destroyMethod("counters",
		abi.UVERBS_ATTR_DESTROY_COUNTERS_HANDLE),
	ioctlKey(abi.UVERBS_OBJECT_PD, abi.UVERBS_METHOD_PD_DESTROY):     destroyMethod("pd", abi.UVERBS_ATTR_DESTROY_PD_HANDLE),
	ioctlKey(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_MR_DESTROY):     destroyMethod("mr", abi.UVERBS_ATTR_DESTROY_MR_HANDLE),
	ioctlKey(abi.UVERBS_OBJECT_MW, abi.UVERBS_METHOD_MW_DESTROY):     destroyMethod("mw", abi.UVERBS_ATTR_DESTROY_MW_HANDLE),
	ioctlKey(abi.UVERBS_OBJECT_AH, abi.UVERBS_METHOD_AH_DESTROY):     destroyMethod("ah", abi.UVERBS_ATTR_DESTROY_AH_HANDLE),
	ioctlKey(abi.UVERBS_OBJECT_XRCD, abi.UVERBS_METHOD_XRCD_DESTROY): destroyMethod("xrcd", abi.UVERBS_ATTR_DESTROY_XRCD_HANDLE),
	ioctlKey(abi.UVERBS_OBJECT_DM, abi.UVERBS_METHOD_DM_FREE):        destroyMethod("dm", abi.UVERBS_ATTR_FREE_DM_HANDLE),
	ioctlKey(abi.UVERBS_OBJECT_FLOW, abi.UVERBS_METHOD_FLOW_DESTROY): destroyMethod("flow", abi.UVERBS_ATTR_DESTROY_FLOW_HANDLE),
	ioctlKey(abi.UVERBS_OBJECT_RWQ_IND_TBL, abi.UVERBS_METHOD_RWQ_IND_TBL_DESTROY): destroyMethod("ind_table",
		abi.UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE),
	ioctlKey(abi.UVERBS_OBJECT_FLOW_ACTION, abi.UVERBS_METHOD_FLOW_ACTION_DESTROY): destroyMethod("flow_action",
		abi.UVERBS_ATTR_DESTROY_FLOW_ACTION_HANDLE),
}

// sizeofSGE is the size of struct ib_uverbs_sge.
const sizeofSGE = 16

// adviceNames are enum ib_uverbs_advise_mr_advice's.
var adviceNames = map[uint8]string{
	abi.IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH:          "PREFETCH",
	abi.IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE:    "PREFETCH_WRITE",
	abi.IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT: "PREFETCH_NO_FAULT",
}

var gidTypeNames = map[uint8]string{
	abi.IB_UVERBS_GID_TYPE_IB: "IB", abi.IB_UVERBS_GID_TYPE_ROCE_V1: "RoCEv1", abi.IB_UVERBS_GID_TYPE_ROCE_V2: "RoCEv2",
}

// gidEntryField shows an ib_uverbs_gid_entry as gid<index>=<gid>/<type>.
func gidEntryField(b []byte) Field {
	var g abi.GIDEntry
	decode(b, &g)
	var raw [16]byte
	binary.NativeEndian.PutUint64(raw[:], g.GID[0])
	binary.NativeEndian.PutUint64(raw[8:], g.GID[1])
	return Field{fmt.Sprintf("gid%d", g.GIDIndex), gidString(raw) + "/" + nameOr(gidTypeNames, uint8(g.GIDType))}
}

// describeIoctl fills d for an RDMA_VERBS_IOCTL event: the method's name
// ("ioctl QP.CREATE"), or for UVERBS_METHOD_INVOKE_WRITE the write command's
// ("CREATE_QP", "CREATE_QP_EX"), and the decoded attributes.
func describeIoctl(n Names, d *Description, e Event) {
	var hdr abi.IoctlHdr
	if !decode(e.Data, &hdr) {
		d.Op = "ioctl"
		return
	}
	d.Op = "ioctl " + ioctlName(n, hdr.ObjectID, hdr.MethodID)
	a := ioctlAttrs{attrs: e.IoctlAttrs, bufs: e.IoctlBufs}
	full := a.attrs != nil
	if !full {
		// Only the record's data: the header and the attributes it holds,
		// enough to name an INVOKE_WRITE.
		for off := sizeofIoctlHdr; off+sizeofIoctlAttr <= len(e.Data) && len(a.attrs) < int(hdr.NumAttrs); off += sizeofIoctlAttr {
			var at abi.IoctlAttr
			decode(e.Data[off:], &at)
			a.attrs = append(a.attrs, at)
		}
		a.bufs = make([][]byte, len(a.attrs))
	}
	ok := e.Returned && e.Ret >= 0
	if hdr.ObjectID == abi.UVERBS_OBJECT_DEVICE && hdr.MethodID == abi.UVERBS_METHOD_INVOKE_WRITE {
		if i := a.index(abi.UVERBS_ATTR_WRITE_CMD); i >= 0 {
			// A const attribute: the command is inline, in the low bits.
			invokeWrite(n, d, a, uint32(a.attrs[i].Data), hdr.NumAttrs, ok)
			return
		}
	}
	d.Args = append(d.Args, Field{"attrs", uint64(hdr.NumAttrs)})
	if m := ioctlMethods[ioctlKey(hdr.ObjectID, hdr.MethodID)]; m != nil && full {
		args, resp := m(a, ok)
		d.Args = append(d.Args, args...)
		if ok {
			d.Resp = resp
		}
	}
}

// invokeWrite describes a write() command carried by UVERBS_METHOD_INVOKE_WRITE:
// named as the command, with its body (UVERBS_ATTR_CORE_IN) and response
// (UVERBS_ATTR_CORE_OUT) decoded as on the write() path.
func invokeWrite(n Names, d *Description, a ioctlAttrs, command uint32, numAttrs uint16, ok bool) {
	d.Op = verbsWriteName(n, command)
	cmd := command & abi.IB_USER_VERBS_CMD_COMMAND_MASK
	reqs, resps := verbsReq, verbsResp
	if command&abi.IB_USER_VERBS_CMD_FLAG_EXTENDED != 0 {
		d.Op += "_EX"
		reqs, resps = verbsExReq, verbsExResp
	}
	d.Args = []Field{{"via", "ioctl"}, {"attrs", uint64(numAttrs)}}
	if dec := reqs[cmd]; dec != nil {
		if b, has := a.in(abi.UVERBS_ATTR_CORE_IN); has {
			d.Args = append(d.Args, dec(b)...)
		}
	}
	if dec := resps[cmd]; dec != nil && ok {
		if b, has := a.out(abi.UVERBS_ATTR_CORE_OUT); has {
			d.Resp = dec(b)
		}
	}
}
