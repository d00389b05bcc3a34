package transfer

// One connection of a Receiver: its handshake, its loop, the names it holds.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
)

type recvConn struct {
	r        *Receiver
	c        *conn
	rep      *ConnReport
	root     *os.Root
	slots    int
	slotSize int
	lastID   uint32
	nfiles   int
	buf      []byte // rehash buffer
	pool     *chunkPool
	copies   [][]byte // free buffers chunks are copied out of the window into
	// per slot of the current window: recvXfer's slot states, the chunk
	// each holds, the CRC32C of a checked chunk, the RESENDs asked for it.
	state   []uint8
	chunkOf []uint64
	crcs    []uint32
	tries   []uint8
	umask   uint32 // the process's, when the connection started

	hand *handshaking // in Receiver.hands until the handshake is over
}

// handshaking is a connection in its handshake (Receiver.hands): its
// handshake runs within ctx, which a newer connection that takes its place
// cancels with the ERROR to send as cause.
type handshaking struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	last   atomic.Int64 // when it started or its HELLO came (UnixNano)
}

// silentHandshake is the oldest connection in r.hands silent for longer
// than HandshakeGrace at now, or nil. r.mu is held.
func (r *Receiver) silentHandshake(now time.Time) *handshaking {
	grace := r.handshakeGrace()
	if grace < 0 {
		return nil
	}
	for _, h := range r.hands {
		if now.Sub(time.Unix(0, h.last.Load())) > grace {
			return h
		}
	}
	return nil
}

// handshakeOver takes the connection out of Receiver.hands (once).
func (rc *recvConn) handshakeOver() {
	h := rc.hand
	if h == nil {
		return
	}
	rc.hand = nil
	rc.r.mu.Lock()
	rc.r.hands = slices.DeleteFunc(rc.r.hands, func(x *handshaking) bool { return x == h })
	rc.r.mu.Unlock()
	h.cancel(nil)
}

func (rc *recvConn) run(ctx context.Context) error {
	root, err := os.OpenRoot(rc.r.Dir)
	if err != nil {
		return &Error{Code: fileErrorCode(err), Text: fmt.Sprintf("destination directory: %v", err)}
	}
	rc.root = root
	defer root.Close()
	defer rc.closePool()
	rc.umask = umask()
	// HELLO (and AUTH) within the handshake timeout, whatever the idle
	// timeout: an unauthenticated peer holds a slot only that long.
	hctx, cancel := context.WithTimeout(rc.hand.ctx, rc.r.handshakeTimeout())
	err = rc.handshake(hctx)
	late := ctx.Err() == nil && hctx.Err() != nil
	cancel()
	if err != nil {
		var evicted *Error
		if ctx.Err() == nil && errors.As(context.Cause(rc.hand.ctx), &evicted) {
			return evicted
		}
		if late {
			what := "HELLO"
			if rc.r.PSK != nil {
				what = "HELLO and AUTH"
			}
			return &Error{Code: CodeProtocol, Text: fmt.Sprintf("the handshake (%s) did not finish within %v", what, rc.r.handshakeTimeout())}
		}
		return err
	}
	rc.handshakeOver()
	if p, ok := rc.c.t.(WritePreparer); ok {
		if err := p.PrepareWrites(rc.slots); err != nil {
			return &Error{Code: CodeInternal, Text: fmt.Sprintf("cannot take a window of %d slots: %v", rc.slots, err)}
		}
	}
	for {
		m, _, err := rc.c.recv(ctx)
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *rdcp.File:
			if err := rc.file(ctx, m); err != nil {
				return err
			}
		case *rdcp.Bye:
			return rc.c.send(ctx, &rdcp.Bye{})
		default:
			return unexpected(m, "while waiting for FILE or BYE")
		}
	}
}

func (rc *recvConn) handshake(ctx context.Context) error {
	hs, helloS, err := rc.c.recvHello(ctx, "before HELLO")
	if err != nil {
		return err
	}
	rc.hand.last.Store(time.Now().UnixNano())
	if hs.Role != rdcp.RoleSender {
		return protoErrorf("HELLO from a %v: the connecting end must be a sender", hs.Role)
	}
	if hs.MinVersion > rdcp.ProtocolVersion || hs.MaxVersion < rdcp.ProtocolVersion {
		return versionError(hs)
	}
	if hs.Verify != 0 {
		return protoErrorf("HELLO from a sender with verification %v: the receiver's policy decides (the sender's must be 0)", hs.Verify)
	}
	if rc.r.PSK != nil && hs.Flags&rdcp.HelloPSK == 0 {
		return &Error{Code: CodeAuthRequired, Text: "this receiver requires a pre-shared key (Receiver.PSK) and the sender has none (Sender.PSK)"}
	}
	rc.slots = min(rc.r.slots(), rc.c.t.MaxSlots(), MaxSlots)
	rc.slotSize = min(rc.r.slotSize(), MaxSlotSize)
	if hs.Slots != 0 {
		rc.slots = min(rc.slots, int(hs.Slots))
	}
	if hs.SlotSize != 0 {
		rc.slotSize = min(rc.slotSize, int(hs.SlotSize))
	}
	for rc.slots > 1 && rc.slots*rc.slotSize > MaxWindow {
		rc.slots--
	}
	if rc.slots < 1 || rc.slots*rc.slotSize > MaxWindow {
		return &Error{Code: CodeInternal, Text: fmt.Sprintf("receiver window %d×%d is unusable", rc.slots, rc.slotSize)}
	}
	hr := &rdcp.Hello{Role: rdcp.RoleReceiver, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion,
		Verify: rdcp.Verify(rc.r.Verify.or()), Slots: uint32(rc.slots), SlotSize: uint32(rc.slotSize)}
	helloR, err := rc.c.sendHello(ctx, hr, rc.r.PSK)
	if err != nil {
		return err
	}
	if rc.r.PSK == nil {
		return nil
	}
	if err := rc.c.recvAuth(ctx, rc.r.PSK, labelSender, helloS, helloR,
		"before AUTH (this receiver requires a pre-shared key)",
		"the sender's pre-shared key differs from the receiver's (Sender.PSK, Receiver.PSK): both ends must use the same key"); err != nil {
		return err
	}
	if err := rc.c.send(ctx, &rdcp.Auth{MAC: authMAC(rc.r.PSK, labelReceiver, helloS, helloR)}); err != nil {
		return err
	}
	rc.c.bind(rc.r.PSK, helloS, helloR, false)
	return nil
}

// versionError is the refusal of a sender's HELLO whose versions do not
// include this receiver's, saying which end to upgrade.
func versionError(hs *rdcp.Hello) error {
	speaks := fmt.Sprintf("protocol version %d", hs.MinVersion)
	if hs.MinVersion != hs.MaxVersion {
		speaks = fmt.Sprintf("protocol versions %d..%d", hs.MinVersion, hs.MaxVersion)
	}
	what := "the sender"
	if hs.MinVersion > rdcp.ProtocolVersion {
		what = "the receiver"
	}
	return &Error{Code: CodeVersion, Text: fmt.Sprintf("the sender speaks %s, this receiver %d: use matching rdmacp versions (upgrade rdmacp on %s)", speaks, rdcp.ProtocolVersion, what)}
}

func (r *Receiver) lock(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy[name] {
		return false
	}
	if r.busy == nil {
		r.busy = map[string]bool{}
	}
	r.busy[name] = true
	return true
}

func (r *Receiver) unlock(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.busy, name)
}
