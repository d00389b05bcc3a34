package transfer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
)

// conn wraps a Transport with message encoding, decoding and the idle
// timeout; both ends use it.
type conn struct {
	t    Transport
	idle time.Duration
	buf  []byte
	last []byte // the raw bytes of the last message received (for AUTH)
	// failed is set once an ERROR went out: one per connection.
	failed bool
	// The session MAC (with a pre-shared key, after AUTH; see bind): the
	// keys and message counters of each direction.
	sendKey, recvKey []byte
	sendSeq, recvSeq uint64
	lastSend         time.Time
	// hashHook, for tests, runs after each piece of a prefix is hashed.
	hashHook func()
}

func newConn(t Transport, idle time.Duration, hashHook func()) *conn {
	return &conn{t: t, idle: idle, buf: make([]byte, 0, MaxMessageSize), hashHook: hashHook}
}

// send encodes and sends m.
func (c *conn) send(ctx context.Context, m rdcp.Message) error {
	b, err := rdcp.Append(c.buf[:0], m)
	if err != nil {
		return &Error{Code: CodeInternal, Text: err.Error()}
	}
	if c.sendKey != nil {
		if b, err = sealMessage(b, c.sendKey, c.sendSeq); err != nil {
			return &Error{Code: CodeInternal, Text: err.Error()}
		}
		c.sendSeq++
	}
	c.buf = b
	c.lastSend = time.Now()
	if err := c.bounded(ctx, func(ctx context.Context) error { return c.t.Send(ctx, b) }); err != nil {
		return fmt.Errorf("send %v: %w", m.Type(), err)
	}
	return nil
}

// keepAlive sends KEEPALIVE when a quarter of the idle timeout has passed
// since the last message: what an end does while it works without talking
// (hashing a long prefix), so the peer does not give up on it.
func (c *conn) keepAlive(ctx context.Context) error {
	if c.idle <= 0 || time.Since(c.lastSend) < c.idle/4 {
		return nil
	}
	return c.send(ctx, &rdcp.KeepAlive{})
}

// open checks and strips the session MAC of a received message (when the
// session is bound) and decodes it.
func (c *conn) open(b []byte) (rdcp.Message, error) {
	if c.recvKey != nil {
		var err error
		if b, err = openMessage(b, c.recvKey, c.recvSeq); err != nil {
			return nil, err
		}
		c.recvSeq++
	}
	m, err := rdcp.Decode(b)
	return m, fromWire(err)
}

// bounded runs op (a Send, WriteImm or Drain, which block while the peer
// takes nothing) within the idle timeout: a peer that stops reading ends
// the connection with ErrPeerGone, not a hang.
func (c *conn) bounded(ctx context.Context, op func(context.Context) error) error {
	if c.idle <= 0 {
		return op(ctx)
	}
	bctx, cancel := context.WithTimeout(ctx, c.idle)
	err := op(bctx)
	late := ctx.Err() == nil && bctx.Err() != nil
	cancel()
	if err != nil && late && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: the peer has taken nothing for %v", ErrPeerGone, c.idle)
	}
	return err
}

// recv waits (at most the idle timeout) for the next arrival: a decoded
// message, or a write (nil Message). An ERROR from the peer comes back as a
// remote *Error.
// KEEPALIVEs are taken here (each restarts the idle timeout).
func (c *conn) recv(ctx context.Context) (rdcp.Message, Arrival, error) {
	for {
		rctx, cancel := ctx, context.CancelFunc(nil)
		if c.idle > 0 {
			rctx, cancel = context.WithTimeout(ctx, c.idle)
		}
		a, err := c.t.Receive(rctx)
		if cancel != nil {
			cancel()
		}
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return nil, a, fmt.Errorf("%w: nothing from the peer for %v", ErrPeerGone, c.idle)
			}
			return nil, a, err
		}
		if m, again, err := c.arrived(a); !again {
			return m, a, err
		}
	}
}

// arrived takes an arrival: a write gives a nil Message, a KEEPALIVE again
// (wait for the next), an ERROR the peer's remote *Error.
func (c *conn) arrived(a Arrival) (m rdcp.Message, again bool, err error) {
	if a.Write {
		return nil, false, nil
	}
	c.last = a.Msg
	if m, err = c.open(a.Msg); err != nil {
		return nil, false, err
	}
	switch m := m.(type) {
	case *rdcp.KeepAlive:
		return nil, true, nil
	case *rdcp.ErrorMsg:
		return nil, false, &Error{Code: Code(m.Code), Text: m.Text, Remote: true}
	}
	return m, false, nil
}

// doneCtx is a context that is already done: Transport.Receive with it
// only takes what has arrived (see Transport).
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// poll is recv without waiting: ok is false when nothing has arrived.
func (c *conn) poll(ctx context.Context) (m rdcp.Message, a Arrival, ok bool, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, a, false, err
		}
		a, err = c.t.Receive(doneCtx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil, a, false, nil
			}
			return nil, a, false, err
		}
		if m, again, err := c.arrived(a); !again {
			return m, a, err == nil, err
		}
	}
}

// fail tells the peer about a fatal local error (best effort, briefly) and
// returns err. Errors the peer sent, and broken connections, are not echoed.
func (c *conn) fail(ctx context.Context, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Remote || c.failed {
		return err
	}
	c.failed = true
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_ = c.send(sctx, &rdcp.ErrorMsg{Code: rdcp.Code(e.Code), Text: rdcp.TruncText(e.Text)})
	return err
}

// unexpected is the protocol error for message m (nil: a write) arriving
// where it does not belong.
func unexpected(m rdcp.Message, where string) error {
	if m == nil {
		return protoErrorf("unexpected data write %s", where)
	}
	return protoErrorf("unexpected %v %s", m.Type(), where)
}

// explain looks, briefly, for an ERROR the peer sent before the connection
// failed with err (a write into a window the peer already withdrew after
// finding fault, say), so the failure is reported by its cause.
func (c *conn) explain(ctx context.Context, err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) || ctx.Err() != nil {
		return err
	}
	ectx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	for range 4 * (MaxSlots + ControlDepth) {
		a, rerr := c.t.Receive(ectx)
		if rerr != nil {
			break
		}
		if a.Write {
			continue
		}
		if m, derr := c.open(a.Msg); derr == nil {
			if em, ok := m.(*rdcp.ErrorMsg); ok {
				return fmt.Errorf("%w (then: %v)", &Error{Code: Code(em.Code), Text: em.Text, Remote: true}, err)
			}
		}
	}
	return err
}
