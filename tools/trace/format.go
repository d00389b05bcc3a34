// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/abi"
	"github.com/rdmago/rdmago/internal/sysfs"
)

// Field is one decoded detail of an event.
type Field struct {
	Key string
	Val any // uint64, int64 or string
}

// Description is an event decoded for people: what was called, on what,
// with which arguments, and what came back.
type Description struct {
	Subsys string  // "uverbs", "ucma" or "cm"
	Op     string  // "CREATE_QP", "ioctl CQ.CREATE", "mmap", "ESTABLISHED", ...
	Dev    string  // the RDMA device ("rxe0"), "" when unknown
	Args   []Field // decoded from the command
	Result string  // "ok", an errno name ("EINVAL"), or "" for events without a return
	Resp   []Field // decoded from the response
}

// Formatter renders events as strace-like lines or JSON.
type Formatter struct {
	Names Names
	// Devices maps the dev_t of /dev/infiniband/uverbsN to the RDMA device
	// name (see UverbsDevices).
	Devices map[uint32]string
	// Start is the CLOCK_MONOTONIC time (ns) printed as 0.
	Start uint64
	// PageSize converts mmap page offsets to bytes; 0 means 4096.
	PageSize int
}

func (f *Formatter) names() Names {
	if f.Names == nil {
		return ABINames{}
	}
	return f.Names
}

// decode fills v from b with the host's byte order, zero-padding b when it is
// shorter than v (callers only use fields inside b). It reports whether any
// byte of v came from b.
func decode(b []byte, v any) bool {
	if len(b) == 0 {
		return false
	}
	n := binary.Size(v)
	if len(b) < n {
		b = append(b[:len(b):len(b)], make([]byte, n-len(b))...)
	}
	_, err := binary.Decode(b[:n], binary.NativeEndian, v)
	return err == nil
}

// decoder makes a table entry: it decodes the struct T from the bytes (as
// decode does) and lists its fields.
func decoder[T any](fields func(*T) []Field) func([]byte) []Field {
	return func(b []byte) []Field {
		var v T
		decode(b, &v)
		return fields(&v)
	}
}

func u(k string, v uint32) Field { return Field{k, uint64(v)} }

var qpStateNames = map[uint8]string{
	abi.IB_QPS_RESET: "RESET", abi.IB_QPS_INIT: "INIT", abi.IB_QPS_RTR: "RTR", abi.IB_QPS_RTS: "RTS",
	abi.IB_QPS_SQD: "SQD", abi.IB_QPS_SQE: "SQE", abi.IB_QPS_ERR: "ERR",
}

var qpTypeNames = map[uint8]string{
	abi.IB_QPT_RC: "RC", abi.IB_QPT_UC: "UC", abi.IB_QPT_UD: "UD", abi.IB_QPT_GSI: "GSI",
	abi.IB_QPT_RAW_PACKET: "RAW_PACKET",
}

func nameOr(m map[uint8]string, v uint8) string {
	if s, ok := m[v]; ok {
		return s
	}
	return strconv.Itoa(int(v))
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
	abi.IB_USER_VERBS_CMD_DEREG_MR: decoder(func(c *abi.DeregMR) []Field {
		return []Field{u("mr", c.MRHandle)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_CQ: decoder(func(c *abi.CreateCQ) []Field {
		return []Field{u("cqe", c.CQE), {"comp_channel", int64(c.CompChannel)}}
	}),
	abi.IB_USER_VERBS_CMD_DESTROY_CQ: decoder(func(c *abi.DestroyCQ) []Field {
		return []Field{u("cq", c.CQHandle)}
	}),
	abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: decoder(func(c *abi.ReqNotifyCQ) []Field {
		return []Field{u("cq", c.CQHandle), u("solicited", c.SolicitedOnly)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_QP: decoder(func(c *abi.CreateQP) []Field {
		return []Field{{"type", nameOr(qpTypeNames, c.QPType)}, u("pd", c.PDHandle), u("send_cq", c.SendCQHandle),
			u("recv_cq", c.RecvCQHandle), u("max_send_wr", c.MaxSendWR), u("max_recv_wr", c.MaxRecvWR)}
	}),
	abi.IB_USER_VERBS_CMD_MODIFY_QP: modifyQP,
	abi.IB_USER_VERBS_CMD_DESTROY_QP: decoder(func(c *abi.DestroyQP) []Field {
		return []Field{u("qp", c.QPHandle)}
	}),
	abi.IB_USER_VERBS_CMD_POST_SEND: decoder(func(c *abi.PostSend) []Field {
		return []Field{u("qp", c.QPHandle), u("wr_count", c.WrCount)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_AH: decoder(func(c *abi.CreateAH) []Field {
		return []Field{u("pd", c.PDHandle)}
	}),
	abi.IB_USER_VERBS_CMD_DESTROY_AH: decoder(func(c *abi.DestroyAH) []Field {
		return []Field{u("ah", c.AHHandle)}
	}),
}

var modifyQP = decoder(func(c *abi.ModifyQP) []Field {
	f := []Field{u("qp", c.QPHandle), {"mask", fmt.Sprintf("%#x", c.AttrMask)}}
	if c.AttrMask&abi.IB_QP_STATE != 0 {
		f = append(f, Field{"state", nameOr(qpStateNames, c.QPState)})
	}
	if c.AttrMask&abi.IB_QP_DEST_QPN != 0 {
		f = append(f, u("dest_qpn", c.DestQPNum))
	}
	return f
})

// verbsExReq decodes the body (after both headers) of extended commands.
var verbsExReq = map[uint32]func(body []byte) []Field{
	abi.IB_USER_VERBS_EX_CMD_MODIFY_QP: modifyQP, // ExModifyQP starts with ModifyQP
}

// verbsResp decodes responses of plain commands.
var verbsResp = map[uint32]func(resp []byte) []Field{
	abi.IB_USER_VERBS_CMD_GET_CONTEXT: decoder(func(r *abi.GetContextResp) []Field {
		return []Field{u("async_fd", r.AsyncFD), u("num_comp_vectors", r.NumCompVectors)}
	}),
	abi.IB_USER_VERBS_CMD_ALLOC_PD: decoder(func(r *abi.AllocPDResp) []Field {
		return []Field{u("pd", r.PDHandle)}
	}),
	abi.IB_USER_VERBS_CMD_REG_MR: decoder(func(r *abi.RegMRResp) []Field {
		return []Field{u("mr", r.MRHandle), {"lkey", fmt.Sprintf("%#x", r.LKey)}, {"rkey", fmt.Sprintf("%#x", r.RKey)}}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL: decoder(func(r *abi.CreateCompChannelResp) []Field {
		return []Field{u("fd", r.FD)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_CQ: createCQResp,
	abi.IB_USER_VERBS_CMD_DESTROY_CQ: decoder(func(r *abi.DestroyCQResp) []Field {
		return []Field{u("comp_events", r.CompEventsReported), u("async_events", r.AsyncEventsReported)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_QP: createQPResp,
	abi.IB_USER_VERBS_CMD_DESTROY_QP: decoder(func(r *abi.DestroyQPResp) []Field {
		return []Field{u("events", r.EventsReported)}
	}),
	abi.IB_USER_VERBS_CMD_CREATE_AH: decoder(func(r *abi.CreateAHResp) []Field {
		return []Field{u("ah", r.AHHandle)}
	}),
}

var createCQResp = decoder(func(r *abi.CreateCQResp) []Field {
	return []Field{u("cq", r.CQHandle), u("cqe", r.CQE)}
})

var createQPResp = decoder(func(r *abi.CreateQPResp) []Field {
	return []Field{u("qp", r.QPHandle), u("qpn", r.QPN)}
})

// verbsExResp decodes responses of extended commands (their structs start
// with the plain response as Base).
var verbsExResp = map[uint32]func(resp []byte) []Field{
	abi.IB_USER_VERBS_EX_CMD_CREATE_CQ: createCQResp,
	abi.IB_USER_VERBS_EX_CMD_CREATE_QP: createQPResp,
}

var portSpaceNames = map[uint16]string{
	abi.RDMA_PS_TCP: "TCP", abi.RDMA_PS_UDP: "UDP", abi.RDMA_PS_IB: "IB", abi.RDMA_PS_IPOIB: "IPOIB",
}

// ucmReq decodes rdma_cm command bodies (after the rdma_ucm_cmd_hdr). The
// data holds the first bytes only: fields past it are not shown.
var ucmReq = map[uint32]func(body []byte) []Field{
	abi.RDMA_USER_CM_CMD_CREATE_ID: decoder(func(c *abi.UCMCreateID) []Field {
		ps, ok := portSpaceNames[c.PS]
		if !ok {
			ps = fmt.Sprintf("%#x", c.PS)
		}
		return []Field{{"ps", ps}, {"qp_type", nameOr(qpTypeNames, c.QPType)}}
	}),
	abi.RDMA_USER_CM_CMD_DESTROY_ID: decoder(func(c *abi.UCMDestroyID) []Field {
		return []Field{u("id", c.ID)}
	}),
	abi.RDMA_USER_CM_CMD_BIND: decoder(func(c *abi.UCMBind) []Field {
		f := []Field{u("id", c.ID)}
		if s := sockaddr(c.Addr[:]); s != "" {
			f = append(f, Field{"addr", s})
		}
		return f
	}),
	abi.RDMA_USER_CM_CMD_RESOLVE_ROUTE: decoder(func(c *abi.UCMResolveRoute) []Field {
		return []Field{u("id", c.ID), u("timeout_ms", c.TimeoutMS)}
	}),
	abi.RDMA_USER_CM_CMD_LISTEN: decoder(func(c *abi.UCMListen) []Field {
		return []Field{u("id", c.ID), u("backlog", c.Backlog)}
	}),
	abi.RDMA_USER_CM_CMD_CONNECT: decoder(func(c *abi.UCMConnect) []Field {
		return []Field{u("qp_num", c.ConnParam.QPNum)}
	}),
	abi.RDMA_USER_CM_CMD_ACCEPT: decoder(func(c *abi.UCMAccept) []Field {
		return []Field{u("qp_num", c.ConnParam.QPNum)}
	}),
	abi.RDMA_USER_CM_CMD_DISCONNECT: decoder(func(c *abi.UCMDisconnect) []Field {
		return []Field{u("id", c.ID)}
	}),
}

// UverbsDevices maps each /dev/infiniband/uverbsN's kernel dev_t
// (MAJOR<<20|MINOR) to its RDMA device name, from sysfsRoot
// ("/sys/class/infiniband_verbs").
func UverbsDevices(sysfsRoot string) map[uint32]string {
	m := map[uint32]string{}
	devs, _ := sysfs.ReadVerbsClass(sysfsRoot)
	for _, d := range devs {
		if d.Dev != 0 {
			m[d.Dev] = d.IBDev
		}
	}
	return m
}

// Describe decodes e.
func (f *Formatter) Describe(e Event) Description {
	n := f.names()
	d := Description{Dev: f.Devices[e.Dev]}
	bo := binary.NativeEndian
	switch e.Kind {
	case KindVerbsWrite:
		d.Subsys = "uverbs"
		if len(e.Data) < sizeofVerbsCmdHdr {
			d.Op = "write"
			d.Args = append(d.Args, Field{"count", e.A0})
			break
		}
		var hdr abi.CmdHdr
		decode(e.Data, &hdr)
		d.Op = verbsWriteName(n, hdr.Command)
		cmd := hdr.Command & abi.IB_USER_VERBS_CMD_COMMAND_MASK
		ex := hdr.Command&abi.IB_USER_VERBS_CMD_FLAG_EXTENDED != 0
		body := e.Data[sizeofVerbsCmdHdr:]
		reqs, resps := verbsReq, verbsResp
		if ex {
			d.Op += "_EX"
			reqs, resps = verbsExReq, verbsExResp
			if len(e.Data) > sizeofVerbsCmdHdr+sizeofVerbsExHdr {
				body = e.Data[sizeofVerbsCmdHdr+sizeofVerbsExHdr:]
			} else {
				body = nil
			}
		}
		if dec := reqs[cmd]; dec != nil && len(e.Data) > sizeofVerbsCmdHdr {
			d.Args = dec(body)
		}
		if dec := resps[cmd]; dec != nil && e.Resp != nil {
			d.Resp = dec(e.Resp)
		}
	case KindVerbsIoctl:
		d.Subsys = "uverbs"
		if e.A0 != uint64(abi.RDMA_VERBS_IOCTL) {
			d.Op = fmt.Sprintf("ioctl %#x", e.A0)
			break
		}
		var hdr abi.IoctlHdr
		if !decode(e.Data, &hdr) {
			d.Op = "ioctl"
			break
		}
		d.Op = "ioctl " + ioctlName(n, hdr.ObjectID, hdr.MethodID)
		d.Args = append(d.Args, Field{"attrs", uint64(hdr.NumAttrs)})
		if hdr.ObjectID == abi.UVERBS_OBJECT_DEVICE && hdr.MethodID == abi.UVERBS_METHOD_INVOKE_WRITE {
			// The write command travels in attribute UVERBS_ATTR_WRITE_CMD (inline data).
			for i := 0; i < int(hdr.NumAttrs); i++ {
				off := sizeofIoctlHdr + i*sizeofIoctlAttr
				var a abi.IoctlAttr
				if off+sizeofIoctlAttr > len(e.Data) || !decode(e.Data[off:], &a) {
					break
				}
				if a.AttrID == abi.UVERBS_ATTR_WRITE_CMD {
					// A write() command sent through ioctl: name it as the command.
					d.Op = verbsWriteName(n, uint32(a.Data))
					d.Args = []Field{{"via", "ioctl"}, {"attrs", uint64(hdr.NumAttrs)}}
				}
			}
		}
	case KindVerbsMmap:
		d.Subsys, d.Op = "uverbs", "mmap"
		if e.Data != nil {
			ps := f.PageSize
			if ps == 0 {
				ps = 4096
			}
			d.Args = []Field{{"offset", fmt.Sprintf("%#x", e.A0*uint64(ps))}, {"len", e.A1}}
		}
	case KindUCMWrite:
		d.Subsys = "ucma"
		var hdr abi.UCMCmdHdr
		if !decode(e.Data, &hdr) {
			d.Op = "write"
			break
		}
		d.Op = orNumber(n.UCMCommand(hdr.Cmd), "CMD_", uint64(hdr.Cmd))
		if dec := ucmReq[hdr.Cmd]; dec != nil && len(e.Data) > int(sizeofUCMCmdHdr) {
			d.Args = dec(e.Data[sizeofUCMCmdHdr:])
		}
		if e.Resp != nil {
			switch hdr.Cmd {
			case abi.RDMA_USER_CM_CMD_CREATE_ID:
				d.Resp = []Field{u("id", bo.Uint32(e.Resp))}
			case abi.RDMA_USER_CM_CMD_DESTROY_ID:
				d.Resp = []Field{u("events", bo.Uint32(e.Resp))}
			case abi.RDMA_USER_CM_CMD_GET_EVENT:
				ev := bo.Uint32(e.Resp[ucmEventRespEvent:])
				d.Resp = []Field{
					{"event", orNumber(n.CMEvent(ev), "EVENT_", uint64(ev))},
					{"status", int64(int32(bo.Uint32(e.Resp[ucmEventRespStatus:])))},
					u("id", bo.Uint32(e.Resp[ucmEventRespID:])),
				}
			}
		}
	case KindCMEvent:
		d.Subsys = "cm"
		d.Op = orNumber(n.CMEvent(uint32(e.A0)), "EVENT_", e.A0)
		d.Args = []Field{{"status", int64(int32(e.A1))}}
		if len(e.Data) >= 64 {
			d.Args = append(d.Args, u("cm_id", bo.Uint32(e.Data)))
			if s := sockaddr(e.Data[8:36]); s != "" {
				d.Args = append(d.Args, Field{"src", s})
			}
			if s := sockaddr(e.Data[36:64]); s != "" {
				d.Args = append(d.Args, Field{"dst", s})
			}
		}
	}
	if e.Returned {
		d.Result = "ok"
		if e.Ret < 0 && e.Ret > -4096 {
			errno := syscall.Errno(-e.Ret)
			d.Result = errnoName(errno)
		}
	}
	return d
}

// sockaddr formats a struct sockaddr_in/_in6 (as the tracepoint copies them).
func sockaddr(b []byte) string {
	if len(b) < 8 {
		return ""
	}
	family := binary.NativeEndian.Uint16(b)
	port := binary.BigEndian.Uint16(b[2:])
	switch family {
	case abi.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port).String()
	case abi.AF_INET6:
		if len(b) < 24 {
			return ""
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port).String()
	case abi.AF_IB:
		return "AF_IB"
	}
	return ""
}

// errnoName is "EINVAL" for EINVAL (the C spelling strace prints), the
// Linux errno the event carries; "errnoN" when the name is not known.
func errnoName(e syscall.Errno) string {
	switch s := linuxErrnoName(e); s {
	case "ENOTSUP":
		return "EOPNOTSUPP" // same number on Linux; the kernel spells it this way
	case "":
	default:
		return s
	}
	return "errno" + strconv.Itoa(int(e))
}

// FormatDuration prints ns as strace -T would, in the unit that fits: "41us",
// "1.250ms", "2.000s".
func FormatDuration(ns uint64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dus", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

func (f *Formatter) rel(ts uint64) float64 {
	if ts < f.Start {
		return 0
	}
	return float64(ts-f.Start) / 1e9
}

func appendFields(sb *strings.Builder, fs []Field) {
	for _, x := range fs {
		fmt.Fprintf(sb, " %s=%v", x.Key, x.Val)
	}
}

// Line renders e like strace: "12.345678 rping[812] uverbs CREATE_QP
// type=RC pd=0 ... -> ok 41us qp=1 qpn=17". Failed calls show the errno
// name and number: "-> EINVAL (-22) 3us".
func (f *Formatter) Line(e Event) string {
	d := f.Describe(e)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%.6f %s[%d] %s", f.rel(e.TS), e.Comm, e.PID, d.Subsys)
	if d.Dev != "" {
		sb.WriteString("/" + d.Dev)
	}
	sb.WriteString(" " + d.Op)
	appendFields(&sb, d.Args)
	if e.Returned {
		sb.WriteString(" -> " + d.Result)
		if e.Ret < 0 {
			fmt.Fprintf(&sb, " (%d)", e.Ret)
		}
		sb.WriteString(" " + FormatDuration(e.Dur))
		appendFields(&sb, d.Resp)
	}
	return sb.String()
}

// jsonEvent is the --json line format.
type jsonEvent struct {
	Time   float64        `json:"time"`
	Comm   string         `json:"comm"`
	PID    uint32         `json:"pid"`
	TID    uint32         `json:"tid"`
	Subsys string         `json:"subsys"`
	Op     string         `json:"op"`
	Dev    string         `json:"dev,omitempty"`
	Args   map[string]any `json:"args,omitempty"`
	Ret    *int64         `json:"ret,omitempty"`
	Result string         `json:"result,omitempty"`
	DurUS  *float64       `json:"dur_us,omitempty"`
	Resp   map[string]any `json:"resp,omitempty"`
}

func fieldMap(fs []Field) map[string]any {
	if len(fs) == 0 {
		return nil
	}
	m := make(map[string]any, len(fs))
	for _, x := range fs {
		m[x.Key] = x.Val
	}
	return m
}

// JSON renders e as one JSON object (no trailing newline).
func (f *Formatter) JSON(e Event) ([]byte, error) {
	d := f.Describe(e)
	j := jsonEvent{
		Time: f.rel(e.TS), Comm: e.Comm, PID: e.PID, TID: e.TID,
		Subsys: d.Subsys, Op: d.Op, Dev: d.Dev, Args: fieldMap(d.Args), Resp: fieldMap(d.Resp),
	}
	if e.Returned {
		ret, dur := e.Ret, float64(e.Dur)/1e3
		j.Ret, j.DurUS, j.Result = &ret, &dur, d.Result
	}
	return json.Marshal(j)
}
