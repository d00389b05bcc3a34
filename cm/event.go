// Copyright 2026 The rdmago Authors.

package cm

import (
	"fmt"
	"strconv"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/uverbs"
)

// EventType is enum rdma_cm_event_type; String gives the C name
// ("RDMA_CM_EVENT_ESTABLISHED").
type EventType uint32

// Event types (enum rdma_cm_event_type).
const (
	EventAddrResolved     EventType = 0  // RDMA_CM_EVENT_ADDR_RESOLVED
	EventAddrError        EventType = 1  // RDMA_CM_EVENT_ADDR_ERROR
	EventRouteResolved    EventType = 2  // RDMA_CM_EVENT_ROUTE_RESOLVED
	EventRouteError       EventType = 3  // RDMA_CM_EVENT_ROUTE_ERROR
	EventConnectRequest   EventType = 4  // RDMA_CM_EVENT_CONNECT_REQUEST
	EventConnectResponse  EventType = 5  // RDMA_CM_EVENT_CONNECT_RESPONSE
	EventConnectError     EventType = 6  // RDMA_CM_EVENT_CONNECT_ERROR
	EventUnreachable      EventType = 7  // RDMA_CM_EVENT_UNREACHABLE
	EventRejected         EventType = 8  // RDMA_CM_EVENT_REJECTED
	EventEstablished      EventType = 9  // RDMA_CM_EVENT_ESTABLISHED
	EventDisconnected     EventType = 10 // RDMA_CM_EVENT_DISCONNECTED
	EventDeviceRemoval    EventType = 11 // RDMA_CM_EVENT_DEVICE_REMOVAL
	EventMulticastJoin    EventType = 12 // RDMA_CM_EVENT_MULTICAST_JOIN
	EventMulticastError   EventType = 13 // RDMA_CM_EVENT_MULTICAST_ERROR
	EventAddrChange       EventType = 14 // RDMA_CM_EVENT_ADDR_CHANGE
	EventTimewaitExit     EventType = 15 // RDMA_CM_EVENT_TIMEWAIT_EXIT
	EventAddrInfoResolved EventType = 16 // RDMA_CM_EVENT_ADDRINFO_RESOLVED (newer than Linux 6.12)
	EventAddrInfoError    EventType = 17 // RDMA_CM_EVENT_ADDRINFO_ERROR (newer than Linux 6.12)
	EventUser             EventType = 18 // RDMA_CM_EVENT_USER (newer than Linux 6.12)
)

var eventTypeNames = [...]string{"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR", "CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED", "DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT", "ADDRINFO_RESOLVED", "ADDRINFO_ERROR", "USER"}

func (t EventType) String() string {
	if int(t) < len(eventTypeNames) {
		return "RDMA_CM_EVENT_" + eventTypeNames[t]
	}
	return "RDMA_CM_EVENT(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// PortSpace is enum rdma_port_space: which transport an ID's port numbers
// belong to.
type PortSpace uint16

// Port spaces.
const (
	PortSpaceTCP   PortSpace = 262 // RDMA_PS_TCP: RC connections (RDMA_PS_TCP), like SOCK_STREAM
	PortSpaceUDP   PortSpace = 273 // RDMA_PS_UDP: UD datagrams (RDMA_PS_UDP), resolved with SIDR
	PortSpaceIPoIB PortSpace = 2   // RDMA_PS_IPOIB: UD, IPoIB's port space
)

func (ps PortSpace) String() string {
	switch ps {
	case PortSpaceTCP:
		return "RDMA_PS_TCP"
	case PortSpaceUDP:
		return "RDMA_PS_UDP"
	case PortSpaceIPoIB:
		return "RDMA_PS_IPOIB"
	}
	return fmt.Sprintf("RDMA_PS(%#x)", uint16(ps))
}

// qpType is the ib_qp_type the kernel pairs with ps (ucma_get_qp_type).
func (ps PortSpace) qpType() (uint8, error) {
	switch ps {
	case PortSpaceTCP:
		return abi.IB_QPT_RC, nil
	case PortSpaceUDP, PortSpaceIPoIB:
		return abi.IB_QPT_UD, nil
	}
	return 0, fmt.Errorf("port space %v: use PortSpaceTCP or PortSpaceUDP", ps)
}

// UDPQKey is RDMA_UDP_QKEY, the QKey rdma_cm gives the QPs of
// RDMA_PS_UDP IDs; UD peers found through the CM send with it.
const UDPQKey = 0x01234567

// ud reports whether IDs of ps carry UD parameters in their events.
func (ps PortSpace) ud() bool { return ps == PortSpaceUDP || ps == PortSpaceIPoIB }

// ConnParam is struct rdma_conn_param: what Connect and Accept send, and what
// CONNECT_REQUEST, CONNECT_RESPONSE, ESTABLISHED, REJECTED and DISCONNECTED
// events carry from the peer.
//
// In events, PrivateData is what the CM message carried, zero-padded by the
// wire to the message's fixed size (56 bytes in a CONNECT_REQUEST, 196 in an
// accept, 148 in a reject on RoCE/IB): applications that need an exact
// length must encode it in the data. InitiatorDepth and ResponderResources
// are seen from the receiver's side (the kernel swaps them): how many RDMA
// READ/atomic requests the receiver may issue (the sender's responder
// resources) and how many it must serve (the sender's initiator depth).
type ConnParam struct {
	PrivateData        []byte
	ResponderResources uint8 // RDMA READ/atomic requests the sender accepts in flight
	InitiatorDepth     uint8 // RDMA READ/atomic requests the sender issues in flight
	FlowControl        bool
	RetryCount         uint8 // transport retries (0-7)
	RNRRetryCount      uint8 // receiver-not-ready retries (0-7, 7 is infinite)
	SRQ                bool  // the QP takes receives from an SRQ
	QPNum              uint32
	QKey               uint32 // AF_IB UD only
}

func connParamFrom(p *abi.UCMConnParam) ConnParam {
	return ConnParam{
		PrivateData:        append([]byte(nil), p.Data()...),
		ResponderResources: p.ResponderResources,
		InitiatorDepth:     p.InitiatorDepth,
		FlowControl:        p.FlowControl != 0,
		RetryCount:         p.RetryCount,
		RNRRetryCount:      p.RNRRetryCount,
		SRQ:                p.SRQ != 0,
		QPNum:              p.QPNum,
		QKey:               p.QKey,
	}
}

// abi encodes p for CONNECT and ACCEPT.
func (p *ConnParam) abi() (abi.UCMConnParam, error) {
	c := abi.UCMConnParam{
		QPNum: p.QPNum, QKey: p.QKey, ResponderResources: p.ResponderResources,
		InitiatorDepth: p.InitiatorDepth, RetryCount: p.RetryCount, RNRRetryCount: p.RNRRetryCount,
		Valid: 1,
	}
	if p.FlowControl {
		c.FlowControl = 1
	}
	if p.SRQ {
		c.SRQ = 1
	}
	if err := c.SetData(p.PrivateData); err != nil {
		return c, err
	}
	return c, nil
}

// UDParam is struct rdma_ud_param: the remote QP of an RDMA_PS_UDP ID, as a
// CONNECT_REQUEST or ESTABLISHED event carries it. AHAttr is the address
// handle attributes that reach the peer (ESTABLISHED on the active side).
type UDParam struct {
	PrivateData []byte
	QPNum       uint32
	QKey        uint32
	AHAttr      uverbs.AHAttr
}

// Event is one rdma_cm event (struct rdma_cm_event).
type Event struct {
	Type EventType
	// Status is 0 on success, a negative errno for errors, and for
	// REJECTED the IB CM reject reason (see RejectReason).
	Status int32
	// ID is the ID the event is for; for CONNECT_REQUEST it is the new
	// connection's ID, and Listener is the listening ID.
	ID       *ID
	Listener *ID
	Param    ConnParam // RDMA_PS_TCP events
	UD       UDParam   // RDMA_PS_UDP events
	ECE      ECE       // the peer's ECE options (CONNECT_REQUEST, CONNECT_RESPONSE, ESTABLISHED)
}

func (e Event) String() string {
	if e.Status != 0 {
		return fmt.Sprintf("%v (status %d)", e.Type, e.Status)
	}
	return e.Type.String()
}

// decodeEvent turns a kernel event into an Event; ps says which member of
// the parameter union is valid.
func decodeEvent(r *abi.UCMEventResp, ps PortSpace) Event {
	ev := Event{Type: EventType(r.EventType()), Status: r.StatusCode(), ECE: ECE{VendorID: r.ECE.VendorID, AttrMod: r.ECE.AttrMod}}
	if ps.ud() {
		u := r.UDParam()
		ev.UD = UDParam{PrivateData: append([]byte(nil), u.Data()...), QPNum: u.QPNum, QKey: u.QKey, AHAttr: ahAttrFromABI(&u.AHAttr)}
	} else {
		c := r.ConnParam()
		ev.Param = connParamFrom(&c)
	}
	return ev
}
