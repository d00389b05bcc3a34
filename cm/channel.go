// Copyright 2026 The rdmago Authors.

package cm

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"

	"github.com/rdmago/rdmago/internal/abi"
)

// kernel is the rdma_cm character device as a Channel drives it. The real one
// is /dev/infiniband/rdma_cm (ucmDev); tests substitute a fake that decodes
// the command bytes, so the fake sits exactly at the kernel boundary.
type kernel interface {
	// write does one write(2) of the encoded command b. buf is the memory
	// that b's pointer field (Response, OptVal) addresses, nil if none; the
	// kernel reads or writes it during the call.
	write(b, buf []byte) error
	// poll calls fn until it returns true, parking the goroutine until the
	// device is readable each time fn returns false. It returns ErrClosed
	// once the device is closed.
	poll(fn func() bool) error
	close() error
}

// Channel is an rdma_cm event channel (struct rdma_event_channel): one open
// /dev/infiniband/rdma_cm descriptor, the IDs created on it, and one
// goroutine that reads every event and hands it to the ID it belongs to.
// The descriptor is non-blocking and parked on Go's netpoller, so the
// channel costs one goroutine however many connections it carries, and no
// thread is ever blocked waiting for a CM event.
//
// Open one with OpenChannel; Dial and Listen use a shared channel of their
// own unless Options.Channel names one. The caller must Close a Channel it
// opened, after closing its IDs; closing it destroys every ID still open on
// it (the kernel does the same when the descriptor is closed).
type Channel struct {
	k kernel

	// mu guards the tables and is held while an event is read and
	// dispatched, so no event of a destroyed ID is delivered after its
	// DESTROY_ID has been reconciled, and kernel IDs reused by a later
	// CREATE_ID cannot receive stale events.
	mu      sync.Mutex
	ids     map[uint32]*ID // by kernel id
	byUID   map[uint64]*ID // by our cookie (CONNECT_REQUEST names the listener by it)
	nextUID uint64
	closed  bool
	stats   Stats

	// The event loop's GET_EVENT command and its response buffer, pinned
	// for the channel's lifetime.
	evCmd []byte
	evBuf []byte
	pin   runtime.Pinner

	loopErr  error
	loopDone chan struct{}

	// shared is the reference count of the package's default channel
	// (guarded by defaultMu); zero for channels the caller opened.
	shared int
}

// Stats are counters of a Channel, for tests and diagnostics.
type Stats struct {
	IDs        int    // IDs open now (including accepted-but-unused requests)
	Events     uint64 // events read from the kernel
	Orphans    uint64 // events for IDs that no longer exist (dropped)
	Mismatches uint64 // DESTROY_ID reported more events than were delivered
	Overflows  uint64 // connection requests rejected: their listener's backlog was full
}

// OpenChannel is rdma_create_event_channel: it opens /dev/infiniband/rdma_cm
// (Linux 2.6.19+, rdma_cm ABI 4; the rdma_ucm module must be loaded) and
// starts the channel's event goroutine. The caller must Close it.
func OpenChannel() (*Channel, error) {
	d, err := openUCM()
	if err != nil {
		return nil, err
	}
	return newChannel(d)
}

func newChannel(k kernel) (*Channel, error) {
	ch := &Channel{
		k:        k,
		ids:      map[uint32]*ID{},
		byUID:    map[uint64]*ID{},
		evBuf:    make([]byte, abi.SizeofUCMEventResp),
		loopDone: make(chan struct{}),
	}
	ch.pin.Pin(&ch.evBuf[0])
	body := &abi.UCMGetEvent{Response: addrOf(ch.evBuf)}
	b, err := abi.EncodeUCMCommand(abi.RDMA_USER_CM_CMD_GET_EVENT, body, len(ch.evBuf))
	if err != nil {
		ch.pin.Unpin()
		k.close()
		return nil, fmt.Errorf("open rdma_cm channel: %w", err)
	}
	ch.evCmd = b
	go ch.loop()
	return ch, nil
}

// Close is rdma_destroy_event_channel. It closes the descriptor, which makes
// the kernel destroy every ID still open on the channel; their pending and
// later operations fail with ErrClosed. It waits for the event goroutine to
// stop. It is idempotent.
func (ch *Channel) Close() error {
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		<-ch.loopDone
		return nil
	}
	ch.closed = true
	ids := make([]*ID, 0, len(ch.ids))
	for _, id := range ch.ids {
		ids = append(ids, id)
	}
	clear(ch.ids)
	clear(ch.byUID)
	ch.stats.IDs = 0
	ch.mu.Unlock()
	err := ch.k.close()
	<-ch.loopDone
	ch.pin.Unpin()
	for _, id := range ids {
		id.markClosed()
	}
	if err != nil {
		return fmt.Errorf("close rdma_cm channel: %w", err)
	}
	return nil
}

// Stats returns the channel's counters.
func (ch *Channel) Stats() Stats {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.stats
}

// Err returns why the event goroutine stopped: nil while it runs or after a
// Close, otherwise the read error that stopped it.
func (ch *Channel) Err() error {
	select {
	case <-ch.loopDone:
		ch.mu.Lock()
		defer ch.mu.Unlock()
		if ch.closed && errors.Is(ch.loopErr, ErrClosed) {
			return nil
		}
		return ch.loopErr
	default:
		return nil
	}
}

// loop is the channel's event goroutine: it reads events until the device
// is closed and dispatches each to its ID.
func (ch *Channel) loop() {
	defer close(ch.loopDone)
	for {
		var rerr error
		err := ch.k.poll(func() bool {
			var ok bool
			ok, rerr = ch.readOne()
			return ok || rerr != nil
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			ch.mu.Lock()
			ch.loopErr = err
			closed := ch.closed
			ids := make([]*ID, 0, len(ch.ids))
			for _, id := range ch.ids {
				ids = append(ids, id)
			}
			ch.mu.Unlock()
			if !closed {
				// The device failed under us: nobody will deliver events
				// again, so wake every waiter with the reason.
				for _, id := range ids {
					id.fail(fmt.Errorf("rdma_cm event channel: %w", err))
				}
			}
			return
		}
	}
}

// readOne reads and dispatches one event. It reports false when none was
// queued (GET_EVENT said EAGAIN).
func (ch *Channel) readOne() (bool, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return false, ErrClosed
	}
	err := ch.k.write(ch.evCmd, ch.evBuf)
	if errors.Is(err, syscall.EAGAIN) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get event: %w", err)
	}
	resp, err := abi.DecodeUCMEventResp(ch.evBuf)
	if err != nil {
		return false, err
	}
	ch.stats.Events++
	ch.dispatch(&resp)
	return true, nil
}

// dispatch hands one event to its ID. ch.mu is held.
func (ch *Channel) dispatch(resp *abi.UCMEventResp) {
	typ := EventType(resp.EventType())
	if typ == EventConnectRequest {
		// UID is the listener's cookie and ID the kernel id of the new
		// connection's rdma_cm id, which exists from now on.
		l := ch.byUID[resp.UID]
		if l == nil {
			// The listener is gone (this cannot normally happen: destroying
			// it discards its undelivered requests). Do not leak the id.
			ch.stats.Orphans++
			ch.destroyKernelID(resp.ID)
			return
		}
		l.delivered++
		if l.backlogFull() {
			ch.stats.Overflows++
			body := &abi.UCMReject{ID: resp.ID}
			if body.SetData([]byte(BacklogFullData)) == nil {
				_ = ch.exec(abi.RDMA_USER_CM_CMD_REJECT, body, nil)
			}
			ch.destroyKernelID(resp.ID)
			return
		}
		child := ch.newIDLocked(resp.ID, l.ps)
		ev := decodeEvent(resp, l.ps)
		ev.ID, ev.Listener = child, l
		child.remote = ev.Param
		l.push(ev)
		return
	}
	id := ch.ids[resp.ID]
	if typ == EventMulticastJoin || typ == EventMulticastError {
		id = ch.byUID[resp.UID] // they name the group's id and the cookie JoinMulticast gave (mcast.go)
	}
	if id == nil {
		ch.stats.Orphans++
		return
	}
	id.delivered++
	ev := decodeEvent(resp, id.ps)
	ev.ID = id
	id.push(ev)
}

// destroyKernelID destroys a kernel id nobody owns. ch.mu is held.
func (ch *Channel) destroyKernelID(kid uint32) {
	body := &abi.UCMDestroyID{ID: kid}
	resp := make([]byte, 4)
	_ = ch.exec(abi.RDMA_USER_CM_CMD_DESTROY_ID, body, resp)
}

// newIDLocked registers an ID for kernel id kid. ch.mu is held.
func (ch *Channel) newIDLocked(kid uint32, ps PortSpace) *ID {
	ch.nextUID++
	id := newID(ch, kid, ch.nextUID, ps)
	ch.ids[kid] = id
	ch.byUID[id.uid] = id
	ch.stats.IDs++
	return id
}

// exec issues one command. buf is the response buffer (or option value) the
// command's pointer field is set to; its length is the header's Out for
// commands with a response.
func (ch *Channel) exec(cmd uint32, body abi.UCMBody, buf []byte) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	out := 0
	if len(buf) > 0 {
		pin.Pin(&buf[0])
		if !setPointer(body, addrOf(buf)) {
			return fmt.Errorf("%s: %T has no pointer field for a %d-byte buffer", abi.UCMCmdString(cmd), body, len(buf))
		}
		if _, ok := body.(*abi.UCMSetOption); !ok {
			out = len(buf)
		}
	}
	b, err := abi.EncodeUCMCommand(cmd, body, out)
	if err != nil {
		return err
	}
	return ch.k.write(b, buf)
}

// setPointer stores addr in body's pointer field.
func setPointer(body abi.UCMBody, addr uint64) bool {
	switch b := body.(type) {
	case *abi.UCMCreateID:
		b.Response = addr
	case *abi.UCMDestroyID:
		b.Response = addr
	case *abi.UCMQuery:
		b.Response = addr
	case *abi.UCMInitQPAttr:
		b.Response = addr
	case *abi.UCMGetEvent:
		b.Response = addr
	case *abi.UCMMigrateID:
		b.Response = addr
	case *abi.UCMJoinMcast:
		b.Response = addr
	case *abi.UCMJoinIPMcast:
		b.Response = addr
	case *abi.UCMSetOption:
		b.OptVal = addr
	default:
		return false
	}
	return true
}

// CreateID is rdma_create_id: a new rdma_cm id in port space ps
// (PortSpaceTCP for reliable connections, PortSpaceUDP for datagrams). The
// caller must Close it.
func (ch *Channel) CreateID(ps PortSpace) (*ID, error) {
	qpt, err := ps.qpType()
	if err != nil {
		return nil, fmt.Errorf("create rdma_cm id: %w", err)
	}
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return nil, fmt.Errorf("create rdma_cm id: %w", ErrClosed)
	}
	ch.nextUID++
	uid := ch.nextUID
	ch.mu.Unlock()
	resp := make([]byte, 4)
	body := &abi.UCMCreateID{UID: uid, PS: uint16(ps), QPType: qpt}
	if err := ch.exec(abi.RDMA_USER_CM_CMD_CREATE_ID, body, resp); err != nil {
		return nil, fmt.Errorf("create rdma_cm id (%v): %w", ps, err)
	}
	var r abi.UCMCreateIDResp
	if err := abi.DecodeUCMResp(resp, &r); err != nil {
		return nil, err
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		// Closing the descriptor destroyed it already.
		return nil, fmt.Errorf("create rdma_cm id: %w", ErrClosed)
	}
	id := newID(ch, r.ID, uid, ps)
	ch.ids[r.ID] = id
	ch.byUID[uid] = id
	ch.stats.IDs++
	return id, nil
}

// destroy is DESTROY_ID plus the reconciliation of events_reported: every
// event the kernel reported for the ID must have been delivered to it.
func (ch *Channel) destroy(id *ID) error {
	resp := make([]byte, 4)
	body := &abi.UCMDestroyID{ID: id.kid}
	err := ch.exec(abi.RDMA_USER_CM_CMD_DESTROY_ID, body, resp)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return nil // the descriptor's close destroyed it
	}
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("destroy rdma_cm id %d: %w", id.kid, err)
	}
	// A CREATE_ID racing with this destroy may already have been given the
	// same kernel id and registered over this one.
	if ch.ids[id.kid] == id {
		delete(ch.ids, id.kid)
	}
	if _, ok := ch.byUID[id.uid]; ok {
		delete(ch.byUID, id.uid)
		ch.stats.IDs--
	}
	if err != nil {
		return nil // already gone (ENOENT): nothing to reconcile
	}
	var r abi.UCMDestroyIDResp
	if derr := abi.DecodeUCMResp(resp, &r); derr != nil {
		return derr
	}
	if r.EventsReported != id.delivered {
		ch.stats.Mismatches++
		return fmt.Errorf("destroy rdma_cm id %d: the kernel reported %d events, %d were delivered", id.kid, r.EventsReported, id.delivered)
	}
	return nil
}
