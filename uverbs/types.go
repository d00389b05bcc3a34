// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"fmt"
	"strings"
)

// QPType is enum ibv_qp_type.
type QPType uint8

// QP types supported by Soft-RoCE.
const (
	QPTypeRC QPType = 2 // IB_UVERBS_QPT_RC: IBV_QPT_RC: reliable connected
	QPTypeUC QPType = 3 // IB_UVERBS_QPT_UC: IBV_QPT_UC: unreliable connected
	QPTypeUD QPType = 4 // IB_UVERBS_QPT_UD: IBV_QPT_UD: unreliable datagram
)

func (t QPType) String() string {
	switch t {
	case QPTypeRC:
		return "IBV_QPT_RC"
	case QPTypeUC:
		return "IBV_QPT_UC"
	case QPTypeUD:
		return "IBV_QPT_UD"
	}
	return fmt.Sprintf("QPType(%d)", uint8(t))
}

// QPState is enum ibv_qp_state.
type QPState uint8

// QP states.
const (
	QPSReset QPState = 0 // IB_QPS_RESET
	QPSInit  QPState = 1 // IB_QPS_INIT
	QPSRTR   QPState = 2 // IB_QPS_RTR
	QPSRTS   QPState = 3 // IB_QPS_RTS
	QPSSQD   QPState = 4 // IB_QPS_SQD
	QPSSQE   QPState = 5 // IB_QPS_SQE
	QPSErr   QPState = 6 // IB_QPS_ERR
)

var qpStateNames = [...]string{"IBV_QPS_RESET", "IBV_QPS_INIT", "IBV_QPS_RTR", "IBV_QPS_RTS", "IBV_QPS_SQD", "IBV_QPS_SQE", "IBV_QPS_ERR"}

func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

// QPAttrMask is enum ibv_qp_attr_mask: which QPAttr fields Modify applies.
type QPAttrMask uint32

// QP attribute mask bits.
const (
	QPAttrState           QPAttrMask = 0x1      // IB_QP_STATE
	QPAttrCurState        QPAttrMask = 0x2      // IB_QP_CUR_STATE
	QPAttrAccessFlags     QPAttrMask = 0x8      // IB_QP_ACCESS_FLAGS
	QPAttrPKeyIndex       QPAttrMask = 0x10     // IB_QP_PKEY_INDEX
	QPAttrPort            QPAttrMask = 0x20     // IB_QP_PORT
	QPAttrQKey            QPAttrMask = 0x40     // IB_QP_QKEY
	QPAttrAV              QPAttrMask = 0x80     // IB_QP_AV
	QPAttrPathMTU         QPAttrMask = 0x100    // IB_QP_PATH_MTU
	QPAttrTimeout         QPAttrMask = 0x200    // IB_QP_TIMEOUT
	QPAttrRetryCnt        QPAttrMask = 0x400    // IB_QP_RETRY_CNT
	QPAttrRNRRetry        QPAttrMask = 0x800    // IB_QP_RNR_RETRY
	QPAttrRQPSN           QPAttrMask = 0x1000   // IB_QP_RQ_PSN
	QPAttrMaxQPRdAtomic   QPAttrMask = 0x2000   // IB_QP_MAX_QP_RD_ATOMIC
	QPAttrMinRNRTimer     QPAttrMask = 0x8000   // IB_QP_MIN_RNR_TIMER
	QPAttrSQPSN           QPAttrMask = 0x10000  // IB_QP_SQ_PSN
	QPAttrMaxDestRdAtomic QPAttrMask = 0x20000  // IB_QP_MAX_DEST_RD_ATOMIC
	QPAttrCap             QPAttrMask = 0x80000  // IB_QP_CAP
	QPAttrDestQPN         QPAttrMask = 0x100000 // IB_QP_DEST_QPN
)

// MTU is enum ibv_mtu.
type MTU uint8

// Path MTUs.
const (
	MTU256  MTU = 1 // IB_MTU_256
	MTU512  MTU = 2 // IB_MTU_512
	MTU1024 MTU = 3 // IB_MTU_1024
	MTU2048 MTU = 4 // IB_MTU_2048
	MTU4096 MTU = 5 // IB_MTU_4096
)

// Bytes is the MTU in bytes, 0 for an invalid value.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

func (m MTU) String() string {
	if b := m.Bytes(); b != 0 {
		return fmt.Sprint(b)
	}
	return fmt.Sprintf("MTU(%d)", uint8(m))
}

// MTUFromBytes maps 256..4096 to an MTU; anything else gives 0.
func MTUFromBytes(n int) MTU {
	for m := MTU256; m <= MTU4096; m++ {
		if m.Bytes() == n {
			return m
		}
	}
	return 0
}

// AccessFlags is enum ibv_access_flags, for MRs and QPs.
type AccessFlags uint32

// Access flags.
const (
	AccessLocalWrite   AccessFlags = 0x1  // IB_UVERBS_ACCESS_LOCAL_WRITE
	AccessRemoteWrite  AccessFlags = 0x2  // IB_UVERBS_ACCESS_REMOTE_WRITE
	AccessRemoteRead   AccessFlags = 0x4  // IB_UVERBS_ACCESS_REMOTE_READ
	AccessRemoteAtomic AccessFlags = 0x8  // IB_UVERBS_ACCESS_REMOTE_ATOMIC
	AccessMWBind       AccessFlags = 0x10 // IB_UVERBS_ACCESS_MW_BIND
	AccessZeroBased    AccessFlags = 0x20 // IB_UVERBS_ACCESS_ZERO_BASED
	AccessOnDemand     AccessFlags = 0x40 // IB_UVERBS_ACCESS_ON_DEMAND
	// AccessFlushGlobal and AccessFlushPersistent allow FLUSH (Linux 6.2+).
	AccessFlushGlobal     AccessFlags = 0x100    // IB_UVERBS_ACCESS_FLUSH_GLOBAL
	AccessFlushPersistent AccessFlags = 0x200    // IB_UVERBS_ACCESS_FLUSH_PERSISTENT
	AccessRelaxedOrdering AccessFlags = 0x100000 // IB_UVERBS_ACCESS_RELAXED_ORDERING
)

var accessNames = []struct {
	f AccessFlags
	n string
}{
	{AccessLocalWrite, "LOCAL_WRITE"}, {AccessRemoteWrite, "REMOTE_WRITE"}, {AccessRemoteRead, "REMOTE_READ"},
	{AccessRemoteAtomic, "REMOTE_ATOMIC"}, {AccessMWBind, "MW_BIND"}, {AccessZeroBased, "ZERO_BASED"},
	{AccessOnDemand, "ON_DEMAND"}, {AccessFlushGlobal, "FLUSH_GLOBAL"}, {AccessFlushPersistent, "FLUSH_PERSISTENT"},
	{AccessRelaxedOrdering, "RELAXED_ORDERING"},
}

func (f AccessFlags) String() string {
	if f == 0 {
		return "0"
	}
	var s []string
	for _, a := range accessNames {
		if f&a.f != 0 {
			s = append(s, "IBV_ACCESS_"+a.n)
			f &^= a.f
		}
	}
	if f != 0 {
		s = append(s, fmt.Sprintf("%#x", uint32(f)))
	}
	return strings.Join(s, "|")
}

// SendFlags is enum ibv_send_flags.
type SendFlags uint32

// Send flags.
const (
	SendFence     SendFlags = 0x1 // IB_SEND_FENCE
	SendSignaled  SendFlags = 0x2 // IB_SEND_SIGNALED: generate a completion (always, with SigAll)
	SendSolicited SendFlags = 0x4 // IB_SEND_SOLICITED: wake a receiver armed with solicited-only
	SendInline    SendFlags = 0x8 // IB_SEND_INLINE: copy SendWR.Inline into the WQE
)

// WROpcode is enum ibv_wr_opcode.
type WROpcode uint32

// Work request opcodes supported by Soft-RoCE.
const (
	WRRDMAWrite         WROpcode = 0 // IB_WR_RDMA_WRITE
	WRRDMAWriteWithImm  WROpcode = 1 // IB_WR_RDMA_WRITE_WITH_IMM
	WRSend              WROpcode = 2 // IB_WR_SEND
	WRSendWithImm       WROpcode = 3 // IB_WR_SEND_WITH_IMM
	WRRDMARead          WROpcode = 4 // IB_WR_RDMA_READ
	WRAtomicCmpAndSwp   WROpcode = 5 // IB_WR_ATOMIC_CMP_AND_SWP
	WRAtomicFetchAndAdd WROpcode = 6 // IB_WR_ATOMIC_FETCH_AND_ADD
	// WRFlush (IBV_WR_FLUSH) and WRAtomicWrite (IBV_WR_ATOMIC_WRITE) need
	// Linux 6.2+; on older kernels posting them fails with ErrNotSupported.
	WRFlush       WROpcode = 14 // IB_WR_FLUSH
	WRAtomicWrite WROpcode = 15 // IB_WR_ATOMIC_WRITE
	// Memory windows and invalidation (RC and UC QPs; see mw.go).
	WRBindMW      WROpcode = 8 // IB_WR_BIND_MW: SendWR.Bind
	WRLocalInv    WROpcode = 7 // IB_WR_LOCAL_INV: SendWR.InvalidateRKey
	WRSendWithInv WROpcode = 9 // IB_WR_SEND_WITH_INV: SendWR.InvalidateRKey, at the receiver
)

var wrNames = map[WROpcode]string{
	WRRDMAWrite: "IBV_WR_RDMA_WRITE", WRRDMAWriteWithImm: "IBV_WR_RDMA_WRITE_WITH_IMM", WRSend: "IBV_WR_SEND",
	WRSendWithImm: "IBV_WR_SEND_WITH_IMM", WRRDMARead: "IBV_WR_RDMA_READ", WRAtomicCmpAndSwp: "IBV_WR_ATOMIC_CMP_AND_SWP",
	WRAtomicFetchAndAdd: "IBV_WR_ATOMIC_FETCH_AND_ADD", WRFlush: "IBV_WR_FLUSH", WRAtomicWrite: "IBV_WR_ATOMIC_WRITE",
	WRBindMW: "IBV_WR_BIND_MW", WRLocalInv: "IBV_WR_LOCAL_INV", WRSendWithInv: "IBV_WR_SEND_WITH_INV",
}

func (o WROpcode) String() string {
	if s, ok := wrNames[o]; ok {
		return s
	}
	return fmt.Sprintf("WROpcode(%d)", uint32(o))
}

// PortState is enum ibv_port_state.
type PortState uint8

// Port states.
const (
	PortNop         PortState = 0 // IB_PORT_NOP
	PortDown        PortState = 1 // IB_PORT_DOWN
	PortInit        PortState = 2 // IB_PORT_INIT
	PortArmed       PortState = 3 // IB_PORT_ARMED
	PortActive      PortState = 4 // IB_PORT_ACTIVE
	PortActiveDefer PortState = 5 // IB_PORT_ACTIVE_DEFER
)

var portStateNames = [...]string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

func (s PortState) String() string {
	if int(s) < len(portStateNames) {
		return "IBV_PORT_" + portStateNames[s]
	}
	return fmt.Sprintf("PortState(%d)", uint8(s))
}

// LinkLayer is the IBV_LINK_LAYER_* of a port.
type LinkLayer uint8

// Link layers.
const (
	LinkLayerUnspecified LinkLayer = 0 // IB_LINK_LAYER_UNSPECIFIED
	LinkLayerInfiniBand  LinkLayer = 1 // IB_LINK_LAYER_INFINIBAND
	LinkLayerEthernet    LinkLayer = 2 // IB_LINK_LAYER_ETHERNET
)

func (l LinkLayer) String() string {
	switch l {
	case LinkLayerUnspecified:
		return "IBV_LINK_LAYER_UNSPECIFIED"
	case LinkLayerInfiniBand:
		return "IBV_LINK_LAYER_INFINIBAND"
	case LinkLayerEthernet:
		return "IBV_LINK_LAYER_ETHERNET"
	}
	return fmt.Sprintf("LinkLayer(%d)", uint8(l))
}

// GIDType is enum ibv_gid_type.
type GIDType uint32

// GID types.
const (
	GIDTypeIB     GIDType = 0 // IB_UVERBS_GID_TYPE_IB
	GIDTypeRoCEv1 GIDType = 1 // IB_UVERBS_GID_TYPE_ROCE_V1
	GIDTypeRoCEv2 GIDType = 2 // IB_UVERBS_GID_TYPE_ROCE_V2
)

func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	}
	return fmt.Sprintf("GIDType(%d)", uint32(t))
}

// EventType is enum ibv_event_type: the kind of an asynchronous event.
type EventType uint32

// Asynchronous event types.
const (
	EventCQErr            EventType = 0  // IB_EVENT_CQ_ERR
	EventQPFatal          EventType = 1  // IB_EVENT_QP_FATAL
	EventQPReqErr         EventType = 2  // IB_EVENT_QP_REQ_ERR
	EventQPAccessErr      EventType = 3  // IB_EVENT_QP_ACCESS_ERR
	EventCommEst          EventType = 4  // IB_EVENT_COMM_EST
	EventSQDrained        EventType = 5  // IB_EVENT_SQ_DRAINED
	EventPathMig          EventType = 6  // IB_EVENT_PATH_MIG
	EventPathMigErr       EventType = 7  // IB_EVENT_PATH_MIG_ERR
	EventDeviceFatal      EventType = 8  // IB_EVENT_DEVICE_FATAL
	EventPortActive       EventType = 9  // IB_EVENT_PORT_ACTIVE
	EventPortErr          EventType = 10 // IB_EVENT_PORT_ERR
	EventLIDChange        EventType = 11 // IB_EVENT_LID_CHANGE
	EventPKeyChange       EventType = 12 // IB_EVENT_PKEY_CHANGE
	EventSMChange         EventType = 13 // IB_EVENT_SM_CHANGE
	EventSRQErr           EventType = 14 // IB_EVENT_SRQ_ERR
	EventSRQLimitReached  EventType = 15 // IB_EVENT_SRQ_LIMIT_REACHED
	EventQPLastWQEReached EventType = 16 // IB_EVENT_QP_LAST_WQE_REACHED
	EventClientReregister EventType = 17 // IB_EVENT_CLIENT_REREGISTER
	EventGIDChange        EventType = 18 // IB_EVENT_GID_CHANGE
	EventWQFatal          EventType = 19 // IB_EVENT_WQ_FATAL
)

var eventNames = [...]string{"CQ_ERR", "QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR", "COMM_EST", "SQ_DRAINED",
	"PATH_MIG", "PATH_MIG_ERR", "DEVICE_FATAL", "PORT_ACTIVE", "PORT_ERR", "LID_CHANGE", "PKEY_CHANGE",
	"SM_CHANGE", "SRQ_ERR", "SRQ_LIMIT_REACHED", "QP_LAST_WQE_REACHED", "CLIENT_REREGISTER", "GID_CHANGE", "WQ_FATAL"}

func (e EventType) String() string {
	if int(e) < len(eventNames) {
		return "IBV_EVENT_" + eventNames[e]
	}
	return fmt.Sprintf("EventType(%d)", uint32(e))
}

// element says what the Element of an event of this type names.
func (e EventType) element() string {
	switch e {
	case EventCQErr:
		return "cq"
	case EventSRQErr, EventSRQLimitReached:
		return "srq"
	case EventWQFatal:
		return "wq"
	case EventDeviceFatal:
		return "device"
	case EventPortActive, EventPortErr, EventLIDChange, EventPKeyChange, EventSMChange, EventClientReregister, EventGIDChange:
		return "port"
	}
	return "qp"
}
