// Copyright 2026 The rdmago Authors.

package rdmanl

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/netlink"
)

// This file is the resource-tracking half of RDMA netlink
// (drivers/infiniband/core/nldev.c, res_get_common_dumpit and the
// fill_res_*_entry functions): what `rdma resource show [qp|cq|mr|pd|cm_id]`
// prints. A summary dump (RDMA_NLDEV_CMD_RES_GET) covers every device; the
// per-object dumps (RES_QP_GET, ...) need a device index and answer with one or
// more messages per device, each holding the device handle and a nested table
// (RDMA_NLDEV_ATTR_RES_QP) of entries (RDMA_NLDEV_ATTR_RES_QP_ENTRY).

// ResCount is one entry of a device's resource summary: a restrack type name
// ("pd", "cq", "qp", "cm_id", "mr", "ctx", "srq") and how many exist.
type ResCount struct {
	Name  string `json:"name"`  // RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME
	Count uint64 `json:"count"` // RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR
}

// ResSummary is one device's line of `rdma resource show`.
type ResSummary struct {
	DevIndex uint32     `json:"ifindex"`
	DevName  string     `json:"ifname"`
	Counts   []ResCount `json:"counts"` // in the kernel's order
}

// Count returns the count of the named type, 0 if the kernel did not report it.
func (s ResSummary) Count(name string) uint64 {
	for _, c := range s.Counts {
		if c.Name == name {
			return c.Count
		}
	}
	return 0
}

// ResOwner says who owns a tracked object: a user process (PID, whose name
// the kernel leaves to /proc/PID/comm) or a kernel client (KernName, such as
// "ib_core" for the GSI QP). PID is 0 for kernel objects and for objects whose
// process is already a zombie.
type ResOwner struct {
	PID      uint32 `json:"pid,omitempty"`       // RDMA_NLDEV_ATTR_RES_PID
	KernName string `json:"kern_name,omitempty"` // RDMA_NLDEV_ATTR_RES_KERN_NAME
}

// Kernel reports whether a kernel client owns the object.
func (o ResOwner) Kernel() bool { return o.KernName != "" }

// QP is one entry of RDMA_NLDEV_CMD_RES_QP_GET (`rdma resource show qp`).
type QP struct {
	DevIndex     uint32       `json:"ifindex"`
	DevName      string       `json:"ifname"`
	Port         uint32       `json:"port,omitempty"` // RDMA_NLDEV_ATTR_PORT_INDEX; 0 before the QP is bound to a port
	LQPN         uint32       `json:"lqpn"`           // RDMA_NLDEV_ATTR_RES_LQPN
	RQPN         uint32       `json:"rqpn,omitempty"` // RDMA_NLDEV_ATTR_RES_RQPN (RC and UC only)
	RQPSN        uint32       `json:"rq_psn,omitempty"`
	SQPSN        uint32       `json:"sq_psn"`
	PathMigState uint8        `json:"path_mig_state,omitempty"` // RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE (RC, UC, XRC)
	HasPathMig   bool         `json:"-"`
	HasRQPN      bool         `json:"-"`
	Type         QPType       `json:"type"`  // RDMA_NLDEV_ATTR_RES_TYPE
	State        QPState      `json:"state"` // RDMA_NLDEV_ATTR_RES_STATE
	PDN          uint32       `json:"pdn"`   // RDMA_NLDEV_ATTR_RES_PDN
	Driver       []DriverAttr `json:"driver,omitempty"`
	ResOwner
}

// CQ is one entry of RDMA_NLDEV_CMD_RES_CQ_GET (`rdma resource show cq`).
type CQ struct {
	DevIndex   uint32       `json:"ifindex"`
	DevName    string       `json:"ifname"`
	CQE        uint32       `json:"cqe"`                // RDMA_NLDEV_ATTR_RES_CQE: the CQ's capacity
	Users      uint64       `json:"users"`              // RDMA_NLDEV_ATTR_RES_USECNT: QPs using it
	PollCtx    uint8        `json:"poll_ctx,omitempty"` // RDMA_NLDEV_ATTR_RES_POLL_CTX (kernel CQs only)
	HasPollCtx bool         `json:"-"`
	DIM        bool         `json:"adaptive_moderation"` // RDMA_NLDEV_ATTR_DEV_DIM
	HasDIM     bool         `json:"-"`                   // the kernel reported DIM (it does for every CQ)
	CQN        uint32       `json:"cqn"`
	CtxN       uint32       `json:"ctxn,omitempty"` // RDMA_NLDEV_ATTR_RES_CTXN (user CQs)
	Driver     []DriverAttr `json:"driver,omitempty"`
	ResOwner
}

// MR is one entry of RDMA_NLDEV_CMD_RES_MR_GET (`rdma resource show mr`).
// The keys and the address are reported only to CAP_NET_ADMIN callers.
type MR struct {
	DevIndex uint32       `json:"ifindex"`
	DevName  string       `json:"ifname"`
	RKey     uint32       `json:"rkey,omitempty"`
	LKey     uint32       `json:"lkey,omitempty"`
	IOVA     uint64       `json:"iova,omitempty"`
	Len      uint64       `json:"mrlen"` // RDMA_NLDEV_ATTR_RES_MRLEN
	MRN      uint32       `json:"mrn"`
	PDN      uint32       `json:"pdn"`
	Driver   []DriverAttr `json:"driver,omitempty"`
	ResOwner
}

// PD is one entry of RDMA_NLDEV_CMD_RES_PD_GET (`rdma resource show pd`).
type PD struct {
	DevIndex         uint32       `json:"ifindex"`
	DevName          string       `json:"ifname"`
	LocalDMALKey     uint32       `json:"local_dma_lkey,omitempty"`     // CAP_NET_ADMIN only
	UnsafeGlobalRKey uint32       `json:"unsafe_global_rkey,omitempty"` // CAP_NET_ADMIN only, if set
	Users            uint64       `json:"users"`                        // RDMA_NLDEV_ATTR_RES_USECNT
	PDN              uint32       `json:"pdn"`
	CtxN             uint32       `json:"ctxn,omitempty"`
	Driver           []DriverAttr `json:"driver,omitempty"`
	ResOwner
}

// CMID is one entry of RDMA_NLDEV_CMD_RES_CM_ID_GET (`rdma resource show
// cm_id`): an rdma_cm identifier bound to the device.
type CMID struct {
	DevIndex uint32         `json:"ifindex"`
	DevName  string         `json:"ifname"`
	Port     uint32         `json:"port,omitempty"`
	LQPN     uint32         `json:"lqpn,omitempty"` // with Type, only once a QP is attached
	Type     QPType         `json:"qp_type,omitempty"`
	HasQP    bool           `json:"-"`
	PS       uint32         `json:"ps"`    // RDMA_NLDEV_ATTR_RES_PS: enum rdma_ucm_port_space
	State    CMState        `json:"state"` // RDMA_NLDEV_ATTR_RES_STATE: enum rdma_cm_state
	Src      netip.AddrPort `json:"src_addr"`
	Dst      netip.AddrPort `json:"dst_addr"`
	CMIDN    uint32         `json:"cm_idn"`
	ResOwner
}

// DriverAttr is one RDMA_NLDEV_ATTR_DRIVER_ENTRY: a driver-specific name and
// value (rxe reports none; mlx5 and others do).
type DriverAttr struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// QPType is enum ib_qp_type (include/rdma/ib_verbs.h).
type QPType uint8

// String is the name iproute2's rdma tool prints.
func (t QPType) String() string {
	names := map[QPType]string{0: "SMI", 1: "GSI", 2: "RC", 3: "UC", 4: "UD", 5: "RAW_IPV6",
		6: "RAW_ETHERTYPE", 8: "RAW_PACKET", 9: "XRC_INI", 10: "XRC_TGT"}
	if s, ok := names[t]; ok {
		return s
	}
	return fmt.Sprintf("QPType(%d)", uint8(t))
}

// MarshalText makes JSON show the name.
func (t QPType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// QPState is enum ib_qp_state.
type QPState uint8

func (s QPState) String() string {
	names := []string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}
	if int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

// MarshalText makes JSON show the name.
func (s QPState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// CMState is enum rdma_cm_state (drivers/infiniband/core/cma_priv.h).
type CMState uint8

func (s CMState) String() string {
	names := []string{"IDLE", "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_QUERY", "ROUTE_RESOLVED",
		"CONNECT", "DISCONNECT", "ADDR_BOUND", "LISTEN", "DEVICE_REMOVAL", "DESTROYING"}
	if int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("CMState(%d)", uint8(s))
}

// MarshalText makes JSON show the name.
func (s CMState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// resTable is the decoded form of one per-object dump message: the device
// handle plus the raw attributes of each entry.
type resTable struct {
	devIndex uint32
	devName  string
	entries  [][]netlink.Attr
}

// parseResTable decodes one RES_*_GET dump message (the RES_GET summary
// included) whose table attribute is tableAttr and whose entries are entryAttr.
func parseResTable(b []byte, tableAttr, entryAttr uint16) (resTable, error) {
	attrs, err := netlink.ParseAttrs(b)
	if err != nil {
		return resTable{}, fmt.Errorf("rdma netlink: resource dump: %w", err)
	}
	var t resTable
	for _, a := range attrs {
		switch a.Type {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			t.devIndex = a.Uint32()
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			t.devName = a.String()
		case tableAttr:
			ents, err := tableEntries(a.Data, entryAttr,
				fmt.Sprintf("resource table %d", tableAttr), fmt.Sprintf("resource entry %d", entryAttr))
			if err != nil {
				return resTable{}, err
			}
			t.entries = append(t.entries, ents...)
		}
	}
	if t.devName == "" {
		return resTable{}, fmt.Errorf("rdma netlink: resource dump without a device name")
	}
	return t, nil
}

// tableEntries decodes a nested table (RDMA_NLDEV_ATTR_RES_QP, ...) into the
// attributes of each of its entries of type entryAttr; table and entry name
// the two levels in its errors.
func tableEntries(b []byte, entryAttr uint16, table, entry string) ([][]netlink.Attr, error) {
	ents, err := netlink.ParseAttrs(b)
	if err != nil {
		return nil, fmt.Errorf("rdma netlink: %s: %w", table, err)
	}
	var out [][]netlink.Attr
	for _, e := range ents {
		if e.Type != entryAttr {
			continue
		}
		fields, err := netlink.ParseAttrs(e.Data)
		if err != nil {
			return nil, fmt.Errorf("rdma netlink: %s: %w", entry, err)
		}
		out = append(out, fields)
	}
	return out, nil
}

// owner and driver attributes are common to every entry type.
func commonAttr(a netlink.Attr, o *ResOwner, drv *[]DriverAttr) bool {
	switch a.Type {
	case abi.RDMA_NLDEV_ATTR_RES_PID:
		o.PID = a.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_KERN_NAME:
		o.KernName = a.String()
	case abi.RDMA_NLDEV_ATTR_DRIVER:
		*drv = append(*drv, parseDriver(a.Data)...)
	default:
		return false
	}
	return true
}

// parseDriver decodes the RDMA_NLDEV_ATTR_DRIVER table: a flat run of
// DRIVER_STRING (the name) followed by one value attribute.
func parseDriver(b []byte) []DriverAttr {
	attrs, err := netlink.ParseAttrs(b)
	if err != nil {
		return nil
	}
	var out []DriverAttr
	var name string
	hex := false
	for _, a := range attrs {
		switch a.Type {
		case abi.RDMA_NLDEV_ATTR_DRIVER_STRING:
			if name != "" { // a string value follows a string name
				out = append(out, DriverAttr{Name: name, Value: a.String()})
				name = ""
			} else {
				name = a.String()
			}
		case abi.RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE:
			hex = a.Uint8() == abi.RDMA_NLDEV_PRINT_TYPE_HEX
		case abi.RDMA_NLDEV_ATTR_DRIVER_U32, abi.RDMA_NLDEV_ATTR_DRIVER_U64,
			abi.RDMA_NLDEV_ATTR_DRIVER_S32, abi.RDMA_NLDEV_ATTR_DRIVER_S64:
			var v string
			switch {
			case a.Type == abi.RDMA_NLDEV_ATTR_DRIVER_S32:
				v = fmt.Sprint(int32(a.Uint32()))
			case a.Type == abi.RDMA_NLDEV_ATTR_DRIVER_S64:
				v = fmt.Sprint(int64(a.Uint64()))
			case hex:
				v = fmt.Sprintf("0x%x", a.Uint64())
			default:
				v = fmt.Sprint(a.Uint64())
			}
			out = append(out, DriverAttr{Name: name, Value: v})
			name, hex = "", false
		}
	}
	return out
}

// parseQPs decodes one RDMA_NLDEV_CMD_RES_QP_GET dump message.
func parseQPs(b []byte) ([]QP, error) {
	t, err := parseResTable(b, abi.RDMA_NLDEV_ATTR_RES_QP, abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY)
	if err != nil {
		return nil, err
	}
	out := make([]QP, 0, len(t.entries))
	for _, ent := range t.entries {
		q := QP{DevIndex: t.devIndex, DevName: t.devName}
		for _, a := range ent {
			if commonAttr(a, &q.ResOwner, &q.Driver) {
				continue
			}
			switch a.Type {
			case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
				q.Port = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_LQPN:
				q.LQPN = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_RQPN:
				q.RQPN, q.HasRQPN = a.Uint32(), true
			case abi.RDMA_NLDEV_ATTR_RES_RQ_PSN:
				q.RQPSN = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_SQ_PSN:
				q.SQPSN = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE:
				q.PathMigState, q.HasPathMig = a.Uint8(), true
			case abi.RDMA_NLDEV_ATTR_RES_TYPE:
				q.Type = QPType(a.Uint8())
			case abi.RDMA_NLDEV_ATTR_RES_STATE:
				q.State = QPState(a.Uint8())
			case abi.RDMA_NLDEV_ATTR_RES_PDN:
				q.PDN = a.Uint32()
			}
		}
		out = append(out, q)
	}
	return out, nil
}

// parseCQs decodes one RDMA_NLDEV_CMD_RES_CQ_GET dump message.
func parseCQs(b []byte) ([]CQ, error) {
	t, err := parseResTable(b, abi.RDMA_NLDEV_ATTR_RES_CQ, abi.RDMA_NLDEV_ATTR_RES_CQ_ENTRY)
	if err != nil {
		return nil, err
	}
	out := make([]CQ, 0, len(t.entries))
	for _, ent := range t.entries {
		c := CQ{DevIndex: t.devIndex, DevName: t.devName}
		for _, a := range ent {
			if commonAttr(a, &c.ResOwner, &c.Driver) {
				continue
			}
			switch a.Type {
			case abi.RDMA_NLDEV_ATTR_RES_CQE:
				c.CQE = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_USECNT:
				c.Users = a.Uint64()
			case abi.RDMA_NLDEV_ATTR_RES_POLL_CTX:
				c.PollCtx, c.HasPollCtx = a.Uint8(), true
			case abi.RDMA_NLDEV_ATTR_DEV_DIM:
				c.DIM, c.HasDIM = a.Uint8() != 0, true
			case abi.RDMA_NLDEV_ATTR_RES_CQN:
				c.CQN = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_CTXN:
				c.CtxN = a.Uint32()
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// parseMRs decodes one RDMA_NLDEV_CMD_RES_MR_GET dump message.
func parseMRs(b []byte) ([]MR, error) {
	t, err := parseResTable(b, abi.RDMA_NLDEV_ATTR_RES_MR, abi.RDMA_NLDEV_ATTR_RES_MR_ENTRY)
	if err != nil {
		return nil, err
	}
	out := make([]MR, 0, len(t.entries))
	for _, ent := range t.entries {
		m := MR{DevIndex: t.devIndex, DevName: t.devName}
		for _, a := range ent {
			if commonAttr(a, &m.ResOwner, &m.Driver) {
				continue
			}
			switch a.Type {
			case abi.RDMA_NLDEV_ATTR_RES_RKEY:
				m.RKey = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_LKEY:
				m.LKey = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_IOVA:
				m.IOVA = a.Uint64()
			case abi.RDMA_NLDEV_ATTR_RES_MRLEN:
				m.Len = a.Uint64()
			case abi.RDMA_NLDEV_ATTR_RES_MRN:
				m.MRN = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_PDN:
				m.PDN = a.Uint32()
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// parsePDs decodes one RDMA_NLDEV_CMD_RES_PD_GET dump message.
func parsePDs(b []byte) ([]PD, error) {
	t, err := parseResTable(b, abi.RDMA_NLDEV_ATTR_RES_PD, abi.RDMA_NLDEV_ATTR_RES_PD_ENTRY)
	if err != nil {
		return nil, err
	}
	out := make([]PD, 0, len(t.entries))
	for _, ent := range t.entries {
		p := PD{DevIndex: t.devIndex, DevName: t.devName}
		for _, a := range ent {
			if commonAttr(a, &p.ResOwner, &p.Driver) {
				continue
			}
			switch a.Type {
			case abi.RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY:
				p.LocalDMALKey = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY:
				p.UnsafeGlobalRKey = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_USECNT:
				p.Users = a.Uint64()
			case abi.RDMA_NLDEV_ATTR_RES_PDN:
				p.PDN = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_CTXN:
				p.CtxN = a.Uint32()
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// parseCMIDs decodes one RDMA_NLDEV_CMD_RES_CM_ID_GET dump message.
func parseCMIDs(b []byte) ([]CMID, error) {
	t, err := parseResTable(b, abi.RDMA_NLDEV_ATTR_RES_CM_ID, abi.RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY)
	if err != nil {
		return nil, err
	}
	out := make([]CMID, 0, len(t.entries))
	for _, ent := range t.entries {
		c := CMID{DevIndex: t.devIndex, DevName: t.devName}
		var drv []DriverAttr
		for _, a := range ent {
			if commonAttr(a, &c.ResOwner, &drv) {
				continue
			}
			switch a.Type {
			case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
				c.Port = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_LQPN:
				c.LQPN = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_TYPE:
				c.Type, c.HasQP = QPType(a.Uint8()), true
			case abi.RDMA_NLDEV_ATTR_RES_PS:
				c.PS = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_STATE:
				c.State = CMState(a.Uint8())
			case abi.RDMA_NLDEV_ATTR_RES_SRC_ADDR:
				c.Src = parseSockaddr(a.Data)
			case abi.RDMA_NLDEV_ATTR_RES_DST_ADDR:
				c.Dst = parseSockaddr(a.Data)
			case abi.RDMA_NLDEV_ATTR_RES_CM_IDN:
				c.CMIDN = a.Uint32()
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// parseSockaddr decodes a struct __kernel_sockaddr_storage holding a
// sockaddr_in or sockaddr_in6 (family in host order, port in network order).
func parseSockaddr(b []byte) netip.AddrPort {
	if len(b) < 4 {
		return netip.AddrPort{}
	}
	family := binary.NativeEndian.Uint16(b)
	port := binary.BigEndian.Uint16(b[2:])
	switch {
	case family == 2 && len(b) >= 8: // AF_INET
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case family == 10 && len(b) >= 24: // AF_INET6: flowinfo at 4, address at 8
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port)
	}
	return netip.AddrPort{}
}

// parseResSummary decodes one RDMA_NLDEV_CMD_RES_GET dump message.
func parseResSummary(b []byte) (ResSummary, error) {
	t, err := parseResTable(b, abi.RDMA_NLDEV_ATTR_RES_SUMMARY, abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY)
	if err != nil {
		return ResSummary{}, err
	}
	s := ResSummary{DevIndex: t.devIndex, DevName: t.devName}
	for _, ent := range t.entries {
		var c ResCount
		for _, a := range ent {
			switch a.Type {
			case abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME:
				c.Name = a.String()
			case abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR:
				c.Count = a.Uint64()
			}
		}
		s.Counts = append(s.Counts, c)
	}
	return s, nil
}

// PortSpaceName names an enum rdma_ucm_port_space value as iproute2 does
// ("TCP" for RDMA_PS_TCP).
func PortSpaceName(ps uint32) string {
	switch ps {
	case 0x0002:
		return "IPOIB"
	case 0x0106:
		return "TCP"
	case 0x0111:
		return "UDP"
	case 0x0113:
		return "IB"
	}
	return fmt.Sprintf("0x%x", ps)
}

// PollCtxName names an enum ib_poll_context value (a kernel CQ's polling mode).
func PollCtxName(p uint8) string {
	names := []string{"DIRECT", "SOFTIRQ", "WORKQUEUE", "UNBOUND_WORKQUEUE"}
	if int(p) < len(names) {
		return names[p]
	}
	return fmt.Sprintf("%d", p)
}

// MigStateName names an enum ib_mig_state value.
func MigStateName(m uint8) string {
	names := []string{"MIGRATED", "REARM", "ARMED"}
	if int(m) < len(names) {
		return names[m]
	}
	return fmt.Sprintf("%d", m)
}

// SRQType is enum ib_srq_type (include/rdma/ib_verbs.h).
type SRQType uint8

// String is the name iproute2's rdma tool prints.
func (t SRQType) String() string {
	names := []string{"BASIC", "XRC", "TM"}
	if int(t) < len(names) {
		return names[t]
	}
	return "UNKNOWN"
}

// MarshalText makes JSON show the name.
func (t SRQType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// QPRange is a run of QP numbers, Min to Max inclusive (Min == Max for one
// QP): the kernel lists the QPs of an SRQ as ascending runs, each either
// RDMA_NLDEV_ATTR_RES_LQPN or RDMA_NLDEV_ATTR_MIN_RANGE/MAX_RANGE.
type QPRange struct {
	Min uint32 `json:"min"`
	Max uint32 `json:"max"`
}

// String is the run as iproute2 prints it: "17" or "17-19".
func (r QPRange) String() string {
	if r.Min == r.Max {
		return fmt.Sprint(r.Min)
	}
	return fmt.Sprintf("%d-%d", r.Min, r.Max)
}

// SRQ is one entry of RDMA_NLDEV_CMD_RES_SRQ_GET (`rdma resource show
// srq`): a shared receive queue, the QPs attached to it and, for XRC and
// tag-matching SRQs, its CQ. Both lab kernels (6.1, 6.12) answer it; a
// kernel without SRQ tracking refuses the command.
type SRQ struct {
	DevIndex uint32       `json:"ifindex"`
	DevName  string       `json:"ifname"`
	SRQN     uint32       `json:"srqn"` // RDMA_NLDEV_ATTR_RES_SRQN
	Type     SRQType      `json:"type"` // RDMA_NLDEV_ATTR_RES_TYPE
	PDN      uint32       `json:"pdn"`
	CQN      uint32       `json:"cqn,omitempty"` // RDMA_NLDEV_ATTR_RES_CQN: XRC and TM SRQs only
	HasCQ    bool         `json:"-"`
	QPs      []QPRange    `json:"qps,omitempty"` // RDMA_NLDEV_ATTR_RES_QP, ascending
	Driver   []DriverAttr `json:"driver,omitempty"`
	ResOwner
}

// parseSRQs decodes one RDMA_NLDEV_CMD_RES_SRQ_GET dump message.
func parseSRQs(b []byte) ([]SRQ, error) {
	t, err := parseResTable(b, abi.RDMA_NLDEV_ATTR_RES_SRQ, abi.RDMA_NLDEV_ATTR_RES_SRQ_ENTRY)
	if err != nil {
		return nil, err
	}
	out := make([]SRQ, 0, len(t.entries))
	for _, ent := range t.entries {
		s := SRQ{DevIndex: t.devIndex, DevName: t.devName}
		for _, a := range ent {
			if commonAttr(a, &s.ResOwner, &s.Driver) {
				continue
			}
			switch a.Type {
			case abi.RDMA_NLDEV_ATTR_RES_SRQN:
				s.SRQN = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_TYPE:
				s.Type = SRQType(a.Uint8())
			case abi.RDMA_NLDEV_ATTR_RES_PDN:
				s.PDN = a.Uint32()
			case abi.RDMA_NLDEV_ATTR_RES_CQN:
				s.CQN, s.HasCQ = a.Uint32(), true
			case abi.RDMA_NLDEV_ATTR_RES_QP:
				if s.QPs, err = parseQPRanges(a.Data); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// parseQPRanges decodes an SRQ's RDMA_NLDEV_ATTR_RES_QP table
// (nldev.c fill_res_srq_qps).
func parseQPRanges(b []byte) ([]QPRange, error) {
	ents, err := tableEntries(b, abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, "SRQ QP table", "SRQ QP entry")
	if err != nil {
		return nil, err
	}
	var out []QPRange
	for _, fields := range ents {
		var r QPRange
		var lqpn, lo, hi bool
		for _, f := range fields {
			switch f.Type {
			case abi.RDMA_NLDEV_ATTR_RES_LQPN:
				r.Min, r.Max, lqpn = f.Uint32(), f.Uint32(), true
			case abi.RDMA_NLDEV_ATTR_MIN_RANGE:
				r.Min, lo = f.Uint32(), true
			case abi.RDMA_NLDEV_ATTR_MAX_RANGE:
				r.Max, hi = f.Uint32(), true
			}
		}
		if !lqpn && !(lo && hi) || r.Max < r.Min {
			return nil, fmt.Errorf("rdma netlink: SRQ QP entry is neither a QP number nor a range: %v", fields)
		}
		out = append(out, r)
	}
	return out, nil
}
