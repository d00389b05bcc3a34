// Copyright 2026 The rdmago Authors.

package cm

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/rdmago/rdmago/internal/sys"
)

// Sentinel errors; test with errors.Is. An *EventError matches the sentinel
// of its event and, for negative statuses, the errno (syscall.ETIMEDOUT, ...).
//
// ErrClosed, ErrNoDevice and ErrNotSupported are the same values as
// uverbs', so errors.Is(err, cm.ErrNoDevice) also matches an error from
// uverbs.
var (
	// ErrClosed means the ID, connection, listener or channel was closed.
	ErrClosed = sys.ErrClosed
	// ErrNoDevice means there is no rdma_cm device or no RDMA device
	// serves the address.
	ErrNoDevice = sys.ErrNoDevice
	// ErrNotSupported means the kernel (or the operating system) lacks
	// what was asked for.
	ErrNotSupported = sys.ErrNotSupported
	// ErrAddrResolution means the destination address could not be
	// resolved to an RDMA device and port (ADDR_ERROR).
	ErrAddrResolution = errors.New("address resolution failed")
	// ErrRouteResolution means no route to the destination was found
	// (ROUTE_ERROR).
	ErrRouteResolution = errors.New("route resolution failed")
	// ErrRejected means the peer (or its CM) rejected the connection
	// (REJECTED). ErrNoListener is also matched when the reason says no one
	// listens on the port.
	ErrRejected = errors.New("connection rejected")
	// ErrNoListener means nothing listens on the destination port: the
	// peer's CM rejected the request with IB_CM_REJ_INVALID_SERVICE_ID,
	// or answered a UD resolve (SIDR) with IB_SIDR_UNSUPPORTED, which
	// rdma_cm reports as UNREACHABLE (ErrUnreachable matches too).
	ErrNoListener = errors.New("no listener on that port")
	// ErrUnreachable means the peer's CM did not answer (UNREACHABLE):
	// the host is down, has no RDMA, or the packets are lost.
	ErrUnreachable = errors.New("peer unreachable")
	// ErrConnect means establishing the connection failed locally or in
	// the exchange (CONNECT_ERROR).
	ErrConnect = errors.New("connection error")
	// ErrDisconnected means the peer disconnected or vanished
	// (DISCONNECTED).
	ErrDisconnected = errors.New("disconnected")
	// ErrDeviceRemoved means the RDMA device under the ID went away
	// (DEVICE_REMOVAL).
	ErrDeviceRemoved = errors.New("RDMA device removed")
	// ErrAddrChange means the address the ID is bound to moved to another
	// device (ADDR_CHANGE).
	ErrAddrChange = errors.New("address changed")
	// ErrCloseTimeout means Conn.Close sent its DREQ but no DISCONNECTED
	// came within Options.CloseTimeout (the peer's DREP, or the CM's own
	// retries, were lost or slow); everything was released anyway. It says
	// nothing about data: a protocol that knows its data arrived (every
	// send acknowledged) may ignore it, as TCP's close ignores a lost FIN.
	ErrCloseTimeout = errors.New("the peer's CM did not answer the DREQ in time")
)

// RejectReason is enum ib_cm_rej_reason (include/rdma/ibta_vol1_c12.h): the
// Status of a REJECTED event on IB and RoCE.
type RejectReason int32

// Reject reasons of the IB CM (IBTA 12.6.7.2).
const (
	RejNoQP                      RejectReason = 1
	RejNoEEC                     RejectReason = 2
	RejNoResources               RejectReason = 3
	RejTimeout                   RejectReason = 4
	RejUnsupported               RejectReason = 5
	RejInvalidCommID             RejectReason = 6
	RejInvalidCommInstance       RejectReason = 7
	RejInvalidServiceID          RejectReason = 8
	RejInvalidTransportType      RejectReason = 9
	RejStaleConn                 RejectReason = 10
	RejRDCNotExist               RejectReason = 11
	RejInvalidGID                RejectReason = 12
	RejInvalidLID                RejectReason = 13
	RejInvalidSL                 RejectReason = 14
	RejInvalidTrafficClass       RejectReason = 15
	RejInvalidHopLimit           RejectReason = 16
	RejInvalidPacketRate         RejectReason = 17
	RejInvalidAltGID             RejectReason = 18
	RejInvalidAltLID             RejectReason = 19
	RejInvalidAltSL              RejectReason = 20
	RejInvalidAltTrafficClass    RejectReason = 21
	RejInvalidAltHopLimit        RejectReason = 22
	RejInvalidAltPacketRate      RejectReason = 23
	RejPortCMRedirect            RejectReason = 24
	RejPortRedirect              RejectReason = 25
	RejInvalidMTU                RejectReason = 26
	RejInsufficientRespResources RejectReason = 27
	RejConsumerDefined           RejectReason = 28 // IB_CM_REJ_CONSUMER_DEFINED: 28: the application rejected it
	RejInvalidRNRRetry           RejectReason = 29
	RejDuplicateLocalCommID      RejectReason = 30
	RejInvalidClassVersion       RejectReason = 31
	RejInvalidFlowLabel          RejectReason = 32
	RejInvalidAltFlowLabel       RejectReason = 33
	RejVendorOptionNotSupported  RejectReason = 35 // IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED: 35
)

var rejectNames = map[RejectReason]string{
	1: "NO_QP", 2: "NO_EEC", 3: "NO_RESOURCES", 4: "TIMEOUT", 5: "UNSUPPORTED", 6: "INVALID_COMM_ID",
	7: "INVALID_COMM_INSTANCE", 8: "INVALID_SERVICE_ID", 9: "INVALID_TRANSPORT_TYPE", 10: "STALE_CONN",
	11: "RDC_NOT_EXIST", 12: "INVALID_GID", 13: "INVALID_LID", 14: "INVALID_SL", 15: "INVALID_TRAFFIC_CLASS",
	16: "INVALID_HOP_LIMIT", 17: "INVALID_PACKET_RATE", 18: "INVALID_ALT_GID", 19: "INVALID_ALT_LID",
	20: "INVALID_ALT_SL", 21: "INVALID_ALT_TRAFFIC_CLASS", 22: "INVALID_ALT_HOP_LIMIT",
	23: "INVALID_ALT_PACKET_RATE", 24: "PORT_CM_REDIRECT", 25: "PORT_REDIRECT", 26: "INVALID_MTU",
	27: "INSUFFICIENT_RESP_RESOURCES", 28: "CONSUMER_DEFINED", 29: "INVALID_RNR_RETRY",
	30: "DUPLICATE_LOCAL_COMM_ID", 31: "INVALID_CLASS_VERSION", 32: "INVALID_FLOW_LABEL",
	33: "INVALID_ALT_FLOW_LABEL", 35: "VENDOR_OPTION_NOT_SUPPORTED",
}

func (r RejectReason) String() string {
	if s, ok := rejectNames[r]; ok {
		return "IB_CM_REJ_" + s
	}
	return fmt.Sprintf("IB_CM_REJ(%d)", int32(r))
}

// explain says in words what a reject reason means to the caller.
func (r RejectReason) explain() string {
	switch r {
	case RejInvalidServiceID:
		return "nothing listens on that port"
	case RejConsumerDefined:
		return "the peer application rejected the connection"
	case RejTimeout:
		return "the peer's CM timed out waiting for us"
	case RejStaleConn:
		return "the peer still holds an old connection with this id"
	case RejNoResources, RejNoQP:
		return "the peer ran out of resources"
	case RejInvalidMTU, RejInvalidGID, RejInvalidTrafficClass, RejInvalidHopLimit:
		return "the peer refused the path parameters"
	case RejVendorOptionNotSupported:
		return "the peer does not support the requested ECE options"
	}
	return ""
}

// EventError is a failure the rdma_cm reported with an event: which
// operation, towards which address, which event and status, and the private
// data the peer attached (REJECTED).
type EventError struct {
	Op     string    // "connect", "accept", "resolve address", ...
	Addr   string    // the peer or bound address, when known
	Event  EventType // the event that reported the failure
	Status int32     // the event's status: a negative errno or a RejectReason
	// PrivateData is the peer's private data of a REJECTED event (the
	// reject message's 148 bytes on RoCE, zero-padded).
	PrivateData []byte
}

func (e *EventError) Error() string {
	var b strings.Builder
	b.WriteString("rdma_cm ")
	b.WriteString(e.Op)
	if e.Addr != "" {
		b.WriteString(" ")
		b.WriteString(e.Addr)
	}
	b.WriteString(": ")
	b.WriteString(e.Event.String())
	switch {
	case e.Event == EventRejected:
		r := RejectReason(e.Status)
		fmt.Fprintf(&b, ", reason %d (%v", e.Status, r)
		if x := r.explain(); x != "" {
			b.WriteString(": ")
			b.WriteString(x)
		}
		b.WriteString(")")
	case e.Status < 0:
		errno := syscall.Errno(-e.Status)
		fmt.Fprintf(&b, ", status %d (%v)", e.Status, errno)
	case e.Status > 0:
		fmt.Fprintf(&b, ", status %d", e.Status)
	}
	if hint := e.hint(); hint != "" {
		b.WriteString(": ")
		b.WriteString(hint)
	}
	return b.String()
}

// hint explains the common causes of an event.
func (e *EventError) hint() string {
	errno := syscall.Errno(0)
	if e.Status < 0 {
		errno = syscall.Errno(-e.Status)
	}
	switch e.Event {
	case EventAddrError:
		switch errno {
		case syscall.ETIMEDOUT:
			return "no neighbour answered for the address (is the host up and on an RDMA-capable link?)"
		case syscall.ENETUNREACH, syscall.EHOSTUNREACH:
			return "no route to the address"
		case syscall.ENODEV:
			return "the interface that routes to the address has no RDMA device (add one with `rdma link add rxe0 type rxe netdev IF`)"
		case syscall.EADDRNOTAVAIL:
			return "the source address is not local"
		}
		return "the address could not be resolved to an RDMA device"
	case EventRouteError:
		if errno == syscall.ETIMEDOUT {
			return "route resolution timed out"
		}
		return "no path to the destination"
	case EventUnreachable:
		if errno == syscall.ETIMEDOUT {
			return "the peer's CM did not answer in time (host down, no RDMA on it, or packets lost)"
		}
		// A positive status is a SIDR reply's (a UD resolve: the
		// kernel reports every status but success as UNREACHABLE).
		switch e.Status {
		case sidrUnsupported:
			return "the peer's CM answered the SIDR request: nothing listens on that port (IB_SIDR_UNSUPPORTED)"
		case sidrReject:
			return "the peer's listener rejected the SIDR request (IB_SIDR_REJECT)"
		case sidrNoQP:
			return "the peer's listener has no QP for the SIDR request (IB_SIDR_NO_QP)"
		}
		return "the peer cannot be reached"
	case EventConnectError:
		return "the connection could not be established"
	case EventDisconnected:
		return "the peer closed the connection or vanished"
	case EventDeviceRemoval:
		return "the RDMA device was removed; close the connection"
	case EventAddrChange:
		return "the bound address moved to another device"
	}
	return ""
}

// SIDR reply statuses (enum ib_cm_sidr_status) that rdma_cm reports as
// UNREACHABLE with the status as is.
const (
	sidrUnsupported = 1 // IB_SIDR_UNSUPPORTED: no listener for the service ID
	sidrReject      = 2 // IB_SIDR_REJECT
	sidrNoQP        = 3 // IB_SIDR_NO_QP
)

// Unwrap returns the sentinel of the event (ErrRejected, ErrUnreachable,
// ...), ErrNoListener for a reject by a port without a listener (a
// connect's REJECTED with IB_CM_REJ_INVALID_SERVICE_ID, or a UD resolve's
// UNREACHABLE with IB_SIDR_UNSUPPORTED), and the errno of a negative
// status.
func (e *EventError) Unwrap() []error {
	var errs []error
	switch e.Event {
	case EventAddrError:
		errs = append(errs, ErrAddrResolution)
	case EventRouteError:
		errs = append(errs, ErrRouteResolution)
	case EventRejected:
		errs = append(errs, ErrRejected, syscall.ECONNREFUSED)
		if RejectReason(e.Status) == RejInvalidServiceID {
			errs = append(errs, ErrNoListener)
		}
	case EventUnreachable:
		errs = append(errs, ErrUnreachable)
		if e.Status == sidrUnsupported {
			errs = append(errs, ErrNoListener)
		}
	case EventConnectError:
		errs = append(errs, ErrConnect)
	case EventDisconnected:
		errs = append(errs, ErrDisconnected)
	case EventDeviceRemoval:
		errs = append(errs, ErrDeviceRemoved)
	case EventAddrChange:
		errs = append(errs, ErrAddrChange)
	}
	if e.Status < 0 && e.Event != EventRejected {
		errs = append(errs, syscall.Errno(-e.Status))
	}
	return errs
}

// RejectReason returns the reject reason of a REJECTED event's error, and
// false for other errors.
func (e *EventError) RejectReason() (RejectReason, bool) {
	if e.Event != EventRejected {
		return 0, false
	}
	return RejectReason(e.Status), true
}

// eventError builds the error for an unexpected or failing event.
func eventError(op, addr string, ev Event) error {
	e := &EventError{Op: op, Addr: addr, Event: ev.Type, Status: ev.Status}
	if ev.Type == EventRejected {
		e.PrivateData = ev.Param.PrivateData
		if ev.ID != nil && ev.ID.ps.ud() {
			e.PrivateData = ev.UD.PrivateData
		}
	}
	return e
}
