// Copyright 2026 The rdmago Authors.

package cm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/uverbs"
)

// ID is an rdma_cm identifier (struct rdma_cm_id), the CM's equivalent of a
// socket: bound, resolved, listening or connected. Its events arrive on its
// Channel's goroutine and queue on the ID; the blocking methods
// (ResolveAddr, ResolveRoute, GetRequest, WaitEvent) take them from the
// queue. Methods are safe for concurrent use, but an ID's events go to
// whichever waiter asks first, so one goroutine should drive one ID.
//
// The caller must Close every ID, including those a CONNECT_REQUEST
// creates (after Accept or Reject), after destroying the QP it used.
type ID struct {
	ch  *Channel
	kid uint32 // the kernel's id
	uid uint64 // our cookie, the event's uid
	ps  PortSpace

	// delivered counts the events dispatched to this ID (guarded by
	// ch.mu), to reconcile with DESTROY_ID's events_reported.
	delivered uint32

	mu     sync.Mutex
	queue  []Event
	reqs   int           // CONNECT_REQUESTs in queue (a listener's backlog in use)
	limit  int           // a listener's backlog (Listen), 0 before
	notify chan struct{} // closed and replaced whenever the queue grows
	err    error         // set when the ID is closed or its channel failed
	hook   func(Event)   // runs on the channel goroutine for each event
	remote ConnParam     // the CONNECT_REQUEST's parameters (passive IDs)

	disconnected chan struct{} // closed at DISCONNECTED, after the hook ran
	removed      chan struct{} // closed at DEVICE_REMOVAL, after the hook ran
	sawDisc      bool          // DISCONNECTED queued (mu)
	sawRem       bool          // DEVICE_REMOVAL queued (mu)
	discOnce     sync.Once
	remOnce      sync.Once
	closeOnce    sync.Once
	closeErr     error
}

func newID(ch *Channel, kid uint32, uid uint64, ps PortSpace) *ID {
	return &ID{
		ch: ch, kid: kid, uid: uid, ps: ps,
		notify:       make(chan struct{}),
		disconnected: make(chan struct{}),
		removed:      make(chan struct{}),
	}
}

// Handle is the kernel's number for the ID (rdma_cm_id's handle); it names
// the ID in the kernel's rdma_cm traces.
func (id *ID) Handle() uint32 { return id.kid }

// PortSpace is the ID's port space.
func (id *ID) PortSpace() PortSpace { return id.ps }

// Channel is the channel the ID lives on.
func (id *ID) Channel() *Channel { return id.ch }

// Disconnected is closed when a DISCONNECTED event arrives for the ID
// (for a Conn's ID, once Conn.Err reports it).
func (id *ID) Disconnected() <-chan struct{} { return id.disconnected }

// Removed is closed when a DEVICE_REMOVAL event arrives for the ID (for a
// Conn's ID, once Conn.Err reports it).
func (id *ID) Removed() <-chan struct{} { return id.removed }

// setHook installs fn, which the channel goroutine calls for every later
// event of the ID after queueing it and before closing Disconnected or
// Removed. fn runs with the channel's lock held: it must not block or call
// back into this package (start a goroutine for that); verbs calls (moving
// a QP to the error state) are fine. It reports whether DISCONNECTED and
// DEVICE_REMOVAL came before fn was installed (fn does not see those).
func (id *ID) setHook(fn func(Event)) (disc, rem bool) {
	id.mu.Lock()
	id.hook = fn
	disc, rem = id.sawDisc, id.sawRem
	id.mu.Unlock()
	return disc, rem
}

// push queues ev, wakes waiters and runs the hook. It runs on the channel
// goroutine with ch.mu held. Disconnected and Removed close only after the
// hook has run, so whoever sees them closed sees what the hook recorded
// (a Conn's Err and Done).
func (id *ID) push(ev Event) {
	id.mu.Lock()
	id.queue = append(id.queue, ev)
	switch ev.Type {
	case EventConnectRequest:
		id.reqs++
	case EventDisconnected:
		id.sawDisc = true
	case EventDeviceRemoval:
		id.sawRem = true
	}
	close(id.notify)
	id.notify = make(chan struct{})
	hook := id.hook
	id.mu.Unlock()
	if hook != nil {
		hook(ev)
	}
	switch ev.Type {
	case EventDisconnected:
		id.discOnce.Do(func() { close(id.disconnected) })
	case EventDeviceRemoval:
		id.remOnce.Do(func() { close(id.removed) })
	}
}

// fail wakes every waiter with err; later waits return it once the queue is
// empty.
func (id *ID) fail(err error) {
	id.mu.Lock()
	if id.err == nil {
		id.err = err
	}
	close(id.notify)
	id.notify = make(chan struct{})
	id.mu.Unlock()
}

// markClosed fails the ID with ErrClosed and discards the events not yet
// taken, returning them: after Close no waiter may see an event that was
// queued before it.
func (id *ID) markClosed() []Event {
	id.mu.Lock()
	id.err = ErrClosed
	dropped := id.queue
	id.queue, id.reqs = nil, 0
	close(id.notify)
	id.notify = make(chan struct{})
	id.mu.Unlock()
	return dropped
}

// WaitEvent returns the ID's next event, waiting for one until ctx is done.
// It fails with ErrClosed once the ID is closed: Close discards the events
// not yet taken.
func (id *ID) WaitEvent(ctx context.Context) (Event, error) {
	for {
		id.mu.Lock()
		if len(id.queue) > 0 {
			ev := id.queue[0]
			id.queue[0] = Event{}
			id.queue = id.queue[1:]
			if ev.Type == EventConnectRequest {
				id.reqs--
			}
			id.mu.Unlock()
			return ev, nil
		}
		if id.err != nil {
			err := id.err
			id.mu.Unlock()
			return Event{}, err
		}
		wake := id.notify
		id.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// pending reports how many events are queued.
func (id *ID) pending() int {
	id.mu.Lock()
	defer id.mu.Unlock()
	return len(id.queue)
}

// await waits for one of the events in want with status 0. Other events end
// the wait with an *EventError, except TIMEWAIT_EXIT of earlier connections
// and ADDR_CHANGE (the bound address moved to another netdev or port; the
// kernel sends it to listeners too, and an accept loop must not end on it),
// which are skipped.
func (id *ID) await(ctx context.Context, op, addr string, want ...EventType) (Event, error) {
	for {
		ev, err := id.WaitEvent(ctx)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return ev, fmt.Errorf("rdma_cm %s %s: waiting for %v: %w", op, addr, want[0], err)
			}
			return ev, fmt.Errorf("rdma_cm %s %s: %w", op, addr, err)
		}
		if slices.Contains(want, ev.Type) && ev.Status == 0 {
			return ev, nil
		}
		if ev.Type == EventTimewaitExit || ev.Type == EventAddrChange {
			continue
		}
		return ev, eventError(op, addr, ev)
	}
}

func (id *ID) exec(cmd uint32, body abi.UCMBody, buf []byte) error {
	id.mu.Lock()
	err := id.err
	id.mu.Unlock()
	if err != nil {
		return err
	}
	return id.ch.exec(cmd, body, buf)
}

// Close is rdma_destroy_id: it destroys the kernel's id (the kernel sends a
// DREQ for a connection still established and frees what is left) and
// checks that every event the kernel reported was delivered. Destroy the
// QP first. Waiters, and every later WaitEvent, get ErrClosed: the events
// not yet taken are discarded, and the connection requests among them (a
// listener's) are rejected and their IDs destroyed. It is idempotent.
func (id *ID) Close() error {
	id.closeOnce.Do(func() {
		id.mu.Lock()
		already := id.err != nil && errors.Is(id.err, ErrClosed)
		id.mu.Unlock()
		if !already {
			id.closeErr = id.ch.destroy(id)
		}
		for _, ev := range id.markClosed() {
			if ev.Type == EventConnectRequest && ev.ID != nil && ev.ID != id {
				ev.ID.Reject(nil, 0)
				ev.ID.Close()
			}
		}
	})
	return id.closeErr
}

// Bind is rdma_bind_addr: it binds the ID to a local address and port (port
// 0 picks a free one). An unspecified address binds to every RDMA device.
func (id *ID) Bind(addr netip.AddrPort) error {
	s, n, err := abi.SockaddrStorageFrom(addr)
	if err != nil {
		return fmt.Errorf("rdma_cm bind %v: %w", addr, err)
	}
	if err := id.exec(abi.RDMA_USER_CM_CMD_BIND, &abi.UCMBind{ID: id.kid, AddrSize: n, Addr: s}, nil); err != nil {
		return fmt.Errorf("rdma_cm bind %v: %w", addr, bindHint(err))
	}
	return nil
}

func bindHint(err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%w (another rdma_cm id holds the port; SetReuseAddr helps only for ports in time-wait)", err)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Errorf("%w (the address is not on this host)", err)
	case errors.Is(err, syscall.ENODEV):
		return fmt.Errorf("%w (no RDMA device serves that address)", err)
	}
	return err
}

func msTimeout(d time.Duration) uint32 {
	if d <= 0 {
		return 2000 // librdmacm examples' usual value
	}
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	if ms > 1<<31 {
		ms = 1 << 31
	}
	return uint32(ms)
}

// ResolveAddr is rdma_resolve_addr followed by the wait for its event: it
// resolves dst (and binds to src unless src is the zero value or an
// unspecified address with port 0) to a local RDMA device
// and port, with the kernel's timeout (0 means 2 s). It returns when
// ADDR_RESOLVED arrives, or an *EventError for ADDR_ERROR (matching
// ErrAddrResolution and the errno), or ctx's error.
func (id *ID) ResolveAddr(ctx context.Context, src, dst netip.AddrPort, timeout time.Duration) error {
	body := &abi.UCMResolveAddr{ID: id.kid, TimeoutMS: msTimeout(timeout)}
	var err error
	if body.DstAddr, body.DstSize, err = abi.SockaddrStorageFrom(dst); err != nil {
		return fmt.Errorf("rdma_cm resolve address %v: %w", dst, err)
	}
	if src.Addr().IsValid() && (!src.Addr().IsUnspecified() || src.Port() != 0) {
		if body.SrcAddr, body.SrcSize, err = abi.SockaddrStorageFrom(src); err != nil {
			return fmt.Errorf("rdma_cm resolve address: source %v: %w", src, err)
		}
	}
	if err := id.exec(abi.RDMA_USER_CM_CMD_RESOLVE_ADDR, body, nil); err != nil {
		return fmt.Errorf("rdma_cm resolve address %v: %w", dst, err)
	}
	_, err = id.await(ctx, "resolve address", dst.String(), EventAddrResolved)
	return err
}

// ResolveRoute is rdma_resolve_route followed by the wait for its event:
// after ResolveAddr, it finds the path to the destination (on RoCE, from
// the neighbour and GID tables) within the kernel's timeout (0 means 2 s).
// It fails with an *EventError for ROUTE_ERROR.
func (id *ID) ResolveRoute(ctx context.Context, timeout time.Duration) error {
	body := &abi.UCMResolveRoute{ID: id.kid, TimeoutMS: msTimeout(timeout)}
	if err := id.exec(abi.RDMA_USER_CM_CMD_RESOLVE_ROUTE, body, nil); err != nil {
		return fmt.Errorf("rdma_cm resolve route: %w", err)
	}
	_, err := id.await(ctx, "resolve route", "", EventRouteResolved)
	return err
}

// AddrInfo is what QUERY (RDMA_USER_CM_QUERY_ADDR) says about an ID: its
// addresses and the RDMA device and port it is bound to.
type AddrInfo struct {
	Local, Remote netip.AddrPort
	NodeGUID      uint64 // the device's node GUID, host order (0 before binding to a device)
	DevIndex      uint32 // the device's index (RDMA netlink's RDMA_NLDEV_ATTR_DEV_INDEX)
	Port          int    // the device port, from 1
	PKey          uint16
}

// HasDevice reports whether the ID is bound to an RDMA device (after
// ResolveAddr, or Bind to an address of one).
func (a AddrInfo) HasDevice() bool { return a.NodeGUID != 0 || a.Port != 0 }

// Query is rdma_query_addr (ucma QUERY, RDMA_USER_CM_QUERY_ADDR): the ID's
// addresses and device (Linux 3.13+).
func (id *ID) Query() (AddrInfo, error) {
	buf := make([]byte, 280)
	if err := id.exec(abi.RDMA_USER_CM_CMD_QUERY, &abi.UCMQuery{ID: id.kid, Option: abi.RDMA_USER_CM_QUERY_ADDR}, buf); err != nil {
		return AddrInfo{}, fmt.Errorf("rdma_cm query address: %w", err)
	}
	var r abi.UCMQueryAddrResp
	if err := abi.DecodeUCMResp(buf, &r); err != nil {
		return AddrInfo{}, err
	}
	a := AddrInfo{NodeGUID: beToHost64(r.NodeGUID), DevIndex: r.IBDevIndex, Port: int(r.PortNum), PKey: beToHost16(r.PKey)}
	if r.SrcSize != 0 {
		a.Local, _ = r.SrcAddr.AddrPort()
	}
	if r.DstSize != 0 {
		a.Remote, _ = r.DstAddr.AddrPort()
	}
	return a, nil
}

// GIDs is what QUERY (RDMA_USER_CM_QUERY_GID) says about an ID: the source
// and destination as AF_IB addresses (port GIDs and service IDs).
type GIDs struct {
	Src, Dst IBAddr
}

// QueryGID is ucma QUERY with RDMA_USER_CM_QUERY_GID: the GIDs the ID uses
// (on RoCE v2 over IPv4, the IPv4-mapped GIDs of the two addresses).
func (id *ID) QueryGID() (GIDs, error) {
	buf := make([]byte, 280)
	if err := id.exec(abi.RDMA_USER_CM_CMD_QUERY, &abi.UCMQuery{ID: id.kid, Option: abi.RDMA_USER_CM_QUERY_GID}, buf); err != nil {
		return GIDs{}, fmt.Errorf("rdma_cm query gid: %w", err)
	}
	var r abi.UCMQueryAddrResp
	if err := abi.DecodeUCMResp(buf, &r); err != nil {
		return GIDs{}, err
	}
	src, _ := r.SrcAddr.IB()
	dst, _ := r.DstAddr.IB()
	return GIDs{Src: ibAddrFrom(&src), Dst: ibAddrFrom(&dst)}, nil
}

// maxPaths is how many path records QueryPath makes room for (primary and
// alternate paths in both directions and a spare).
const maxPaths = 6

// QueryPath is ucma QUERY with RDMA_USER_CM_QUERY_PATH (rdma_query_addr's
// path records, Linux 4.17+): the path records of the resolved route, with
// their PathRecord.Flags (primary, outbound, ...).
func (id *ID) QueryPath() ([]PathRecord, error) {
	buf := make([]byte, 8+maxPaths*abi.SizeofIBPathRecData)
	if err := id.exec(abi.RDMA_USER_CM_CMD_QUERY, &abi.UCMQuery{ID: id.kid, Option: abi.RDMA_USER_CM_QUERY_PATH}, buf); err != nil {
		return nil, fmt.Errorf("rdma_cm query path: %w", err)
	}
	_, paths, err := abi.DecodeUCMQueryPathResp(buf)
	if err != nil {
		return nil, err
	}
	recs := make([]PathRecord, len(paths))
	for i := range paths {
		recs[i] = pathFromWire(&paths[i])
	}
	return recs, nil
}

// Route is what QUERY_ROUTE says about an ID (the older query librdmacm
// uses when AF_IB is unavailable).
type Route struct {
	NodeGUID      uint64 // host order
	DevIndex      uint32
	Port          int
	Local, Remote netip.AddrPort
	Paths         []PathRecord
}

// QueryRoute is ucma QUERY_ROUTE.
func (id *ID) QueryRoute() (Route, error) {
	buf := make([]byte, 208)
	if err := id.exec(abi.RDMA_USER_CM_CMD_QUERY_ROUTE, &abi.UCMQuery{ID: id.kid}, buf); err != nil {
		return Route{}, fmt.Errorf("rdma_cm query route: %w", err)
	}
	var r abi.UCMQueryRouteResp
	if err := abi.DecodeUCMResp(buf, &r); err != nil {
		return Route{}, err
	}
	rt := Route{NodeGUID: beToHost64(r.NodeGUID), DevIndex: r.IBDevIndex, Port: int(r.PortNum)}
	rt.Local, _ = r.SrcAddr.AddrPort()
	rt.Remote, _ = r.DstAddr.AddrPort()
	n := min(int(r.NumPaths), len(r.IBRoute))
	if r.NumPaths == 0 {
		n = 1 // RoCE with no SA path: the GIDs are in the first record
	}
	for i := range r.IBRoute[:n] {
		rt.Paths = append(rt.Paths, pathFromUser(&r.IBRoute[i]))
	}
	return rt, nil
}

// Listen is rdma_listen: the bound ID starts accepting connection requests,
// which GetRequest returns. backlog bounds the requests not yet taken (0 or
// less, or more than the kernel's maximum, means that maximum: sysctl
// net.rdma_ucm.max_backlog). The channel reads every event at once, so the
// kernel's own count never fills: the ID enforces the backlog itself, and
// a request that finds backlog requests queued is rejected at once
// (REJECTED at the peer, reason consumer-defined, private data
// BacklogFullData) and its kernel id destroyed; Stats.Overflows counts them.
func (id *ID) Listen(backlog int) error {
	if backlog < 0 {
		backlog = 0
	}
	limit := ucmMaxBacklog()
	if backlog > 0 && backlog < limit {
		limit = backlog
	}
	id.mu.Lock()
	id.limit = limit
	id.mu.Unlock()
	if err := id.exec(abi.RDMA_USER_CM_CMD_LISTEN, &abi.UCMListen{ID: id.kid, Backlog: uint32(backlog)}, nil); err != nil {
		id.mu.Lock()
		id.limit = 0
		id.mu.Unlock()
		return fmt.Errorf("rdma_cm listen: %w", err)
	}
	return nil
}

// BacklogFullData is the private data of the reject a listener sends for a
// connection request beyond its backlog.
const BacklogFullData = "rdma_cm: listen backlog full"

// backlogFull reports whether the listener holds as many requests not yet
// taken as its backlog allows. It runs on the channel goroutine.
func (id *ID) backlogFull() bool {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.limit > 0 && id.reqs >= id.limit
}

// GetRequest waits for the next CONNECT_REQUEST on a listening ID (the
// asynchronous rdma_get_request). The event's ID is the new connection's,
// to Accept or Reject and then Close.
func (id *ID) GetRequest(ctx context.Context) (Event, error) {
	return id.await(ctx, "get request", "", EventConnectRequest)
}

// Remote returns the parameters of the CONNECT_REQUEST that created the ID
// (zero for IDs created with CreateID).
func (id *ID) Remote() ConnParam { return id.remote }

// checkPrivateData enforces the private data limits of the CM message that
// will carry it, so an oversize buffer fails here with a clear error instead
// of an EINVAL from the kernel.
func checkPrivateData(op string, ps PortSpace, n int) error {
	var max int
	var what string
	switch op {
	case "connect":
		max, what = abi.MaxPrivateDataTCPConnect, "an RDMA_PS_TCP connect (the IB CM REQ's 92 bytes minus the rdma_cm header's 36)"
		if ps.ud() {
			max, what = abi.MaxPrivateDataUDPConnect, "an RDMA_PS_UDP resolve (the SIDR REQ's 216 bytes minus the rdma_cm header's 36)"
		}
	case "accept":
		max, what = abi.MaxPrivateDataTCPAccept, "an RDMA_PS_TCP accept (the IB CM REP)"
		if ps.ud() {
			max, what = abi.MaxPrivateDataUDPAccept, "an RDMA_PS_UDP accept (the SIDR REP)"
		}
	case "reject":
		max, what = abi.MaxPrivateDataReject, "a reject (the IB CM REJ)"
	default:
		return nil
	}
	if n > max {
		return fmt.Errorf("rdma_cm %s: %d bytes of private data, but %s carries at most %d: %w", op, n, what, max, ErrPrivateDataTooLong)
	}
	return nil
}

// ErrPrivateDataTooLong means private data exceeds what the CM message
// carries (see MaxPrivateData).
var ErrPrivateDataTooLong = errors.New("private data too long")

// MaxPrivateData returns how many bytes of private data op ("connect",
// "accept" or "reject") carries in port space ps on IB and RoCE.
func MaxPrivateData(op string, ps PortSpace) int {
	switch op {
	case "connect":
		if ps.ud() {
			return abi.MaxPrivateDataUDPConnect
		}
		return abi.MaxPrivateDataTCPConnect
	case "accept":
		if ps.ud() {
			return abi.MaxPrivateDataUDPAccept
		}
		return abi.MaxPrivateDataTCPAccept
	case "reject":
		return abi.MaxPrivateDataReject
	}
	return 0
}

// Connect is rdma_connect's command (it does not wait): it sends the
// connection request (RC) or the service ID resolution request (UD) with p.
// For RC, p.QPNum is the local QP. The answer is an event: CONNECT_RESPONSE
// (then move the QP to RTR and RTS and call Establish), REJECTED,
// UNREACHABLE or CONNECT_ERROR; for UD, ESTABLISHED with the peer's QP.
func (id *ID) Connect(p ConnParam) error {
	if err := checkPrivateData("connect", id.ps, len(p.PrivateData)); err != nil {
		return err
	}
	c, err := p.abi()
	if err != nil {
		return fmt.Errorf("rdma_cm connect: %w", err)
	}
	if err := id.exec(abi.RDMA_USER_CM_CMD_CONNECT, &abi.UCMConnect{ConnParam: c, ID: id.kid}, nil); err != nil {
		return fmt.Errorf("rdma_cm connect: %w", err)
	}
	return nil
}

// Establish sends the RTU that completes an RC connection after
// CONNECT_RESPONSE (rdma_establish; an ACCEPT without parameters on the
// active side). Move the QP to RTS first.
func (id *ID) Establish() error {
	if err := id.exec(abi.RDMA_USER_CM_CMD_ACCEPT, &abi.UCMAccept{ID: id.kid, UID: id.uid}, nil); err != nil {
		return fmt.Errorf("rdma_cm establish (RTU): %w", err)
	}
	return nil
}

// Accept is rdma_accept's command (it does not wait): it answers the
// CONNECT_REQUEST that created the ID with p (for RC move the QP to RTR and
// RTS first; p.QPNum is the local QP). An RC ID then gets ESTABLISHED when
// the peer's RTU arrives; a UD accept is complete at once.
func (id *ID) Accept(p ConnParam) error {
	if err := checkPrivateData("accept", id.ps, len(p.PrivateData)); err != nil {
		return err
	}
	c, err := p.abi()
	if err != nil {
		return fmt.Errorf("rdma_cm accept: %w", err)
	}
	if err := id.exec(abi.RDMA_USER_CM_CMD_ACCEPT, &abi.UCMAccept{UID: id.uid, ConnParam: c, ID: id.kid}, nil); err != nil {
		return fmt.Errorf("rdma_cm accept: %w", err)
	}
	return nil
}

// Reject is rdma_reject (rdma_reject_ece with RejVendorOptionNotSupported):
// it refuses the CONNECT_REQUEST that created the ID, sending data (at most
// 148 bytes) to the peer, whose connect fails with REJECTED. reason must be
// 0 (RejConsumerDefined) or RejVendorOptionNotSupported. Close the ID
// afterwards.
func (id *ID) Reject(data []byte, reason RejectReason) error {
	if reason != 0 && reason != RejConsumerDefined && reason != RejVendorOptionNotSupported {
		return fmt.Errorf("rdma_cm reject: reason %v: the kernel lets applications send only %v or %v: %w", reason, RejConsumerDefined, RejVendorOptionNotSupported, syscall.EINVAL)
	}
	if err := checkPrivateData("reject", id.ps, len(data)); err != nil {
		return err
	}
	body := &abi.UCMReject{ID: id.kid, Reason: uint8(reason)}
	if err := body.SetData(data); err != nil {
		return fmt.Errorf("rdma_cm reject: %w", err)
	}
	if err := id.exec(abi.RDMA_USER_CM_CMD_REJECT, body, nil); err != nil {
		return fmt.Errorf("rdma_cm reject: %w", err)
	}
	return nil
}

// Disconnect is rdma_disconnect's command: it sends a DREQ (or answers the
// peer's with a DREP). Move the QP to the error state first so outstanding
// work flushes. DISCONNECTED follows.
func (id *ID) Disconnect() error {
	if err := id.exec(abi.RDMA_USER_CM_CMD_DISCONNECT, &abi.UCMDisconnect{ID: id.kid}, nil); err != nil {
		return fmt.Errorf("rdma_cm disconnect: %w", err)
	}
	return nil
}

// InitQPAttr is rdma_init_qp_attr: the attributes and the mask of those
// that are set, which move the ID's QP to state, as the CM computed them
// from the route and the connection's parameters; pass them to
// uverbs.QP.Modify. It fails with ErrNotSupported when the CM asks for
// attributes uverbs.QPAttr cannot carry (alternate path, path migration).
func (id *ID) InitQPAttr(state uverbs.QPState) (uverbs.QPAttr, uverbs.QPAttrMask, error) {
	a, err := id.initQPAttr(state)
	if err != nil {
		return uverbs.QPAttr{}, 0, err
	}
	return qpAttrFromABI(&a)
}

func (id *ID) initQPAttr(state uverbs.QPState) (abi.QPAttr, error) {
	buf := make([]byte, abi.SizeofIBUverbsQPAttr)
	if err := id.exec(abi.RDMA_USER_CM_CMD_INIT_QP_ATTR, &abi.UCMInitQPAttr{ID: id.kid, QPState: uint32(state)}, buf); err != nil {
		return abi.QPAttr{}, fmt.Errorf("rdma_cm init qp attr (state %d): %w", state, err)
	}
	return abi.DecodeUCMInitQPAttrResp(buf)
}

// Notify is rdma_notify: it tells the CM that the QP saw event (an
// ib_event_type, in practice IB_EVENT_COMM_EST when data arrives before
// ESTABLISHED).
func (id *ID) Notify(event uint32) error {
	if err := id.exec(abi.RDMA_USER_CM_CMD_NOTIFY, &abi.UCMNotify{ID: id.kid, Event: event}, nil); err != nil {
		return fmt.Errorf("rdma_cm notify: %w", err)
	}
	return nil
}

// setOption is rdma_set_option: it sets option name at level
// (RDMA_OPTION_ID or RDMA_OPTION_IB) to val, which must have the size the
// option expects. SetTOS, SetReuseAddr, SetAFOnly and SetAckTimeout are the
// typed options.
func (id *ID) setOption(level, name uint32, val []byte) error {
	if len(val) == 0 {
		return fmt.Errorf("rdma_cm set option %d/%d: empty value: %w", level, name, syscall.EINVAL)
	}
	body := &abi.UCMSetOption{ID: id.kid, Level: level, OptName: name, OptLen: uint32(len(val))}
	if err := id.exec(abi.RDMA_USER_CM_CMD_SET_OPTION, body, val); err != nil {
		return fmt.Errorf("rdma_cm set option %d/%d: %w", level, name, err)
	}
	return nil
}

// SetTOS sets the type of service (RDMA_OPTION_ID_TOS) of the ID's
// traffic; on RoCE v2 it becomes the IP header's DSCP/ECN byte. Set it
// before ResolveRoute.
func (id *ID) SetTOS(tos uint8) error {
	return id.setOption(abi.RDMA_OPTION_ID, abi.RDMA_OPTION_ID_TOS, []byte{tos})
}

// SetReuseAddr sets RDMA_OPTION_ID_REUSEADDR (like SO_REUSEADDR). Set it
// before Bind.
func (id *ID) SetReuseAddr(on bool) error {
	return id.setOption(abi.RDMA_OPTION_ID, abi.RDMA_OPTION_ID_REUSEADDR, boolInt(on))
}

// SetAFOnly sets RDMA_OPTION_ID_AFONLY (like IPV6_V6ONLY). Set it before
// Bind.
func (id *ID) SetAFOnly(on bool) error {
	return id.setOption(abi.RDMA_OPTION_ID, abi.RDMA_OPTION_ID_AFONLY, boolInt(on))
}

// SetAckTimeout sets RDMA_OPTION_ID_ACK_TIMEOUT (Linux 4.16+): the QP's
// local ACK timeout exponent, 4.096 µs × 2^timeout, that InitQPAttr will
// return for RTS.
func (id *ID) SetAckTimeout(timeout uint8) error {
	return id.setOption(abi.RDMA_OPTION_ID, abi.RDMA_OPTION_ID_ACK_TIMEOUT, []byte{timeout})
}

func boolInt(on bool) []byte {
	b := make([]byte, 4)
	if on {
		binary.NativeEndian.PutUint32(b, 1)
	}
	return b
}

// beToHost64 turns a __be64 the kernel copied as a native integer into its
// value.
func beToHost64(v uint64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}

func beToHost16(v uint16) uint16 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], v)
	return binary.BigEndian.Uint16(b[:])
}
