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

	"github.com/rdmago/rdmago/internal/abi"
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

// Formatter renders events as strace-like lines or JSON. It remembers the
// QP handles it saw created, so it is for one goroutine at a time.
type Formatter struct {
	Names Names
	// Devices maps the dev_t of /dev/infiniband/uverbsN to the RDMA device
	// name (see UverbsDevices).
	Devices map[uint32]string
	// Start is the CLOCK_MONOTONIC time (ns) printed as 0.
	Start uint64
	// PageSize converts mmap page offsets to bytes; 0 means 4096.
	PageSize int

	qpns   map[qpnKey]uint64  // QP handle -> QPN, from the creations seen (qpn.go)
	owners map[uint32]QPOwner // QPN -> the process that created it (owners.go)
	sqProd map[qpnKey]uint32  // QP handle -> send ring producer index at its last doorbell (datapath.go)
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

var portSpaceNames = map[uint16]string{
	abi.RDMA_PS_TCP: "TCP", abi.RDMA_PS_UDP: "UDP", abi.RDMA_PS_IB: "IB", abi.RDMA_PS_IPOIB: "IPOIB",
}

// ucmReq decodes rdma_cm command bodies (after the rdma_ucm_cmd_hdr); most
// decoders are in ucmdec.go.
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
	abi.RDMA_USER_CM_CMD_BIND:          ucmBind,
	abi.RDMA_USER_CM_CMD_BIND_IP:       ucmBindIP,
	abi.RDMA_USER_CM_CMD_RESOLVE_IP:    ucmResolveIP,
	abi.RDMA_USER_CM_CMD_RESOLVE_ADDR:  ucmResolveAddr,
	abi.RDMA_USER_CM_CMD_QUERY:         ucmQuery,
	abi.RDMA_USER_CM_CMD_REJECT:        ucmReject,
	abi.RDMA_USER_CM_CMD_INIT_QP_ATTR:  ucmInitQPAttr,
	abi.RDMA_USER_CM_CMD_NOTIFY:        ucmNotify,
	abi.RDMA_USER_CM_CMD_JOIN_IP_MCAST: ucmJoinIPMcast,
	abi.RDMA_USER_CM_CMD_JOIN_MCAST:    ucmJoinMcast,
	abi.RDMA_USER_CM_CMD_LEAVE_MCAST:   ucmLeaveMcast,
	abi.RDMA_USER_CM_CMD_SET_OPTION:    ucmSetOption,
	abi.RDMA_USER_CM_CMD_MIGRATE_ID:    ucmMigrateID,
	abi.RDMA_USER_CM_CMD_RESOLVE_ROUTE: decoder(func(c *abi.UCMResolveRoute) []Field {
		return []Field{u("id", c.ID), u("timeout_ms", c.TimeoutMS)}
	}),
	abi.RDMA_USER_CM_CMD_LISTEN: decoder(func(c *abi.UCMListen) []Field {
		return []Field{u("id", c.ID), u("backlog", c.Backlog)}
	}),
	abi.RDMA_USER_CM_CMD_CONNECT: ucmConnect,
	abi.RDMA_USER_CM_CMD_ACCEPT:  ucmAccept,
	abi.RDMA_USER_CM_CMD_DISCONNECT: decoder(func(c *abi.UCMDisconnect) []Field {
		return []Field{u("id", c.ID)}
	}),
}

// UverbsDevices maps each /dev/infiniband/uverbsN's kernel dev_t
// (MAJOR<<20|MINOR) to its RDMA device name, from sysfsRoot
// (normally sysfs.ClassVerbs, /sys/class/infiniband_verbs).
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
		if cmd == abi.IB_USER_VERBS_CMD_POST_SEND && !ex {
			f.describeWQE(&d, e)
		}
	case KindVerbsIoctl:
		d.Subsys = "uverbs"
		if e.A0 != uint64(abi.RDMA_VERBS_IOCTL) {
			d.Op = fmt.Sprintf("ioctl %#x", e.A0)
			break
		}
		describeIoctl(n, &d, e)
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
				d.Resp = ucmEventStatus(d.Resp, int32(bo.Uint32(e.Resp[ucmEventRespStatus:])))
			case abi.RDMA_USER_CM_CMD_INIT_QP_ATTR:
				d.Resp = ucmInitQPAttrResp(e.Resp)
			}
		}
	case KindCompletion:
		describeCompletion(&d, e)
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
	f.tieQPN(&d, e)
	return d
}

// sockaddr formats a struct sockaddr_in, _in6 or _ib (as the tracepoint and
// the rdma_cm commands carry them) with abi's decoders: "10.0.0.1:4791",
// "[fe80::1%2]:4791", "ib[GID]:SID" (the service id carries the port space
// and port of RDMA_PS_* ids), "AF_IB" when b is too short for a
// sockaddr_ib; "" for another family or a b too short for its address.
func sockaddr(b []byte) string {
	var s abi.SockaddrStorage
	copy(s[:], b)
	switch fam := s.Family(); {
	case len(b) < 8:
	case fam == abi.AF_INET || fam == abi.AF_INET6 && len(b) >= 24:
		if ap, err := s.AddrPort(); err == nil {
			return ap.String()
		}
	case fam == abi.AF_IB:
		ib, err := s.IB()
		if err != nil || len(b) < abi.SizeofSockaddrIB {
			return "AF_IB"
		}
		return fmt.Sprintf("ib[%s]:%#x", netip.AddrFrom16(ib.GID()), ib.SID())
	}
	return ""
}

// errnoName is "EINVAL" for EINVAL (the C spelling strace prints), the
// Linux errno the event carries; "errnoN" when the name is not known.
func errnoName(e syscall.Errno) string {
	if s := kernelErrnoNames[e]; s != "" {
		return s
	}
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
	e = f.attribute(e)
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
			fmt.Fprintf(&sb, " (%d%s)", e.Ret, errnoNote(e.Ret))
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
	e = f.attribute(e)
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
