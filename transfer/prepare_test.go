package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// preparing is a receiver's end that implements transfer.WritePreparer and
// logs, in order, what it receives ("recv HELLO", "write"), what it sends
// ("send WINDOW") and each PrepareWrites ("prepare 3"). PrepareWrites
// fails with fail when set.
type preparing struct {
	*transfertest.Transport
	fail error
	mu   sync.Mutex
	log  []string
}

func (p *preparing) add(s string) {
	p.mu.Lock()
	p.log = append(p.log, s)
	p.mu.Unlock()
}

func (p *preparing) events() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

// msgType names a raw (possibly sealed) message by its header's type.
func msgType(b []byte) string {
	h, err := rdcp.DecodeHeader(b)
	if err != nil {
		return "malformed"
	}
	return h.Type.String()
}

func (p *preparing) Receive(ctx context.Context) (transfer.Arrival, error) {
	a, err := p.Transport.Receive(ctx)
	switch {
	case err != nil:
	case a.Write:
		p.add("write")
	default:
		p.add("recv " + msgType(a.Msg))
	}
	return a, err
}

func (p *preparing) Send(ctx context.Context, msg []byte) error {
	p.add("send " + msgType(msg))
	return p.Transport.Send(ctx, msg)
}

func (p *preparing) PrepareWrites(n int) error {
	p.add(fmt.Sprintf("prepare %d", n))
	return p.fail
}

var _ transfer.WritePreparer = (*preparing)(nil)

// servePreparing serves one end of a Pipe with r, through a preparing
// whose PrepareWrites fails with fail; it returns the other end, the
// preparing and the channel that gets ServeConn's error.
func servePreparing(ctx context.Context, r *transfer.Receiver, fail error) (*transfertest.Transport, *preparing, <-chan error) {
	st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
	p := &preparing{Transport: rt, fail: fail}
	done := make(chan error, 1)
	go func() {
		_, err := r.ServeConn(ctx, p)
		rt.Close()
		done <- err
	}()
	return st, p, done
}

// The receiver asks its transport to prepare for writes (transfer/rdma then
// posts the receives writes consume, and registers their buffers) once the
// sender authenticated, and before it offers any window: once per
// connection, with the most slots a window of it has. A peer that has not
// authenticated never gets that far.
func TestPrepareWritesAfterAuth(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	data := randBytes(17, 5*4096+100)
	src := tree(t, t.TempDir(), map[string][]byte{"a": data, "b": data[:100]})
	items := plan(t, filepath.Join(src, "a"), filepath.Join(src, "b"))
	for _, c := range []struct {
		name            string
		rpsk, spsk      []byte
		after           string // the last message the receiver gets before it prepares
		slots, askSlots int    // the receiver's Slots, the sender's wish
		want            string
	}{
		{"no key", nil, nil, "send HELLO", 3, 0, "prepare 3"},
		{"key", key, key, "send AUTH", 3, 0, "prepare 3"},
		{"sender asks for fewer slots", key, key, "send AUTH", 3, 2, "prepare 2"},
	} {
		r := &transfer.Receiver{Dir: t.TempDir(), PSK: c.rpsk, Slots: c.slots, SlotSize: 4096, IdleTimeout: 5 * time.Second}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		st, p, done := servePreparing(ctx, r, nil)
		rep, err := (&transfer.Sender{PSK: c.spsk, Slots: c.askSlots}).Send(ctx, st, items)
		st.Close()
		if rerr := <-done; err != nil || rerr != nil || !rep.OK(2) {
			t.Fatalf("%s: send %v, receive %v, %+v", c.name, err, rerr, rep)
		}
		cancel()
		log := p.events()
		prep := slices.IndexFunc(log, func(s string) bool { return strings.HasPrefix(s, "prepare") })
		if prep < 0 {
			t.Errorf("%s: the receiver never prepared for writes: %q", c.name, log)
			continue
		}
		if log[prep] != c.want {
			t.Errorf("%s: %q, want %q", c.name, log[prep], c.want)
		}
		if n := slices.IndexFunc(log[prep+1:], func(s string) bool { return strings.HasPrefix(s, "prepare") }); n >= 0 {
			t.Errorf("%s: prepared again: %q", c.name, log)
		}
		if prep == 0 || log[prep-1] != c.after {
			t.Errorf("%s: prepared after %q, want right after %q: %q", c.name, log[:prep], c.after, log)
		}
		if w := slices.Index(log, "send WINDOW"); w < prep {
			t.Errorf("%s: WINDOW at %d, prepared at %d: %q", c.name, w, prep, log)
		}
		if w := slices.Index(log, "write"); w < prep {
			t.Errorf("%s: a write at %d, prepared at %d: %q", c.name, w, prep, log)
		}
	}
}

// A peer that does not authenticate (silent, HELLO only, the wrong key)
// never makes the receiver prepare for writes; one that does, when
// preparing fails, is told so before any WINDOW.
func TestPrepareWritesNeverBeforeAuth(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	hello := &rdcp.Hello{Role: rdcp.RoleSender, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion, Flags: rdcp.HelloPSK}
	for _, c := range []struct {
		name string
		peer func(ctx context.Context, st *transfertest.Transport) error
	}{
		{"silent", func(context.Context, *transfertest.Transport) error { return nil }},
		{"hello then silent", func(ctx context.Context, st *transfertest.Transport) error {
			p := &rawPeer{t: t, tr: st, ctx: ctx}
			p.send(hello)
			p.expect(rdcp.MsgHello)
			return nil
		}},
		{"wrong key", func(ctx context.Context, st *transfertest.Transport) error {
			src := tree(t, t.TempDir(), map[string][]byte{"f": []byte("x")})
			_, err := (&transfer.Sender{PSK: []byte("another key, 32 bytes long .....")}).Send(ctx, st, plan(t, filepath.Join(src, "f")))
			return err
		}},
	} {
		r := &transfer.Receiver{Dir: t.TempDir(), PSK: key, HandshakeTimeout: 300 * time.Millisecond, IdleTimeout: time.Minute}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		st, p, done := servePreparing(ctx, r, nil)
		c.peer(ctx, st)
		rerr := <-done
		st.Close()
		cancel()
		if rerr == nil {
			t.Errorf("%s: the receiver served the connection", c.name)
		}
		if log := p.events(); slices.ContainsFunc(log, func(s string) bool { return strings.HasPrefix(s, "prepare") }) {
			t.Errorf("%s: the receiver prepared for writes (%v): %q", c.name, rerr, log)
		}
	}

	// Authenticated, but preparing fails: the sender is told why, and no
	// WINDOW is offered.
	r := &transfer.Receiver{Dir: t.TempDir(), PSK: key, IdleTimeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, p, done := servePreparing(ctx, r, errors.New("register 16 receive buffers: cannot allocate memory"))
	src := tree(t, t.TempDir(), map[string][]byte{"f": []byte("some data")})
	_, serr := (&transfer.Sender{PSK: key}).Send(ctx, st, plan(t, filepath.Join(src, "f")))
	st.Close()
	rerr := <-done
	for _, err := range []error{serr, rerr} {
		if !errors.Is(err, transfer.ErrInternal) || !strings.Contains(err.Error(), "cannot allocate memory") {
			t.Errorf("failed PrepareWrites: %v, want an internal error that says why", err)
		}
	}
	if log := p.events(); slices.Contains(log, "send WINDOW") {
		t.Errorf("WINDOW offered after PrepareWrites failed: %q", log)
	}
}
