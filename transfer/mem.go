package transfer

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// MemConfig configures one end of a MemPipe.
type MemConfig struct {
	// MaxSlots is the end's MaxSlots (default 64): its inbound queue holds
	// that many writes plus ControlDepth messages; a full queue blocks the
	// peer's Send and WriteImm, as an RC queue pair retries on RNR.
	MaxSlots int
	// Faults are applied to what this end sends.
	Faults Faults
}

// Faults inject failures into what one end of a MemPipe sends. A nil hook
// delivers everything. Hooks run in the sending goroutine (sleep in one to
// delay).
type Faults struct {
	// Message sees the i-th control message (from 0) this end sends, as a
	// copy it may modify (corrupt) before delivery.
	Message func(i int, msg []byte) Fault
	// Write sees the i-th write (from 0) this end posts: data is the peer's
	// memory just written, which it may modify (corrupt).
	Write func(i int, data []byte) Fault
}

// Fault is what happens to one message or write.
type Fault int

// Faults.
const (
	Deliver Fault = iota // as normal
	Drop                 // it vanishes (a write's data is not written either)
	Hold                 // it arrives after the next thing this end sends
	Break                // the connection breaks before it arrives
)

// MemTransport is one end of an in-memory Transport (MemPipe): control
// messages and write notices go through a bounded queue, writes copy straight
// into the peer's registered memory. It enforces what RDMA does: writes only
// into open regions, within bounds; a violation breaks the connection with
// ErrRemoteAccess.
type MemTransport struct {
	cfg  MemConfig
	peer *MemTransport
	link *memLink
	in   chan memItem

	// sending side, one goroutine at a time
	held   *memItem
	nmsg   int
	nwrite int

	mu       sync.Mutex
	regions  map[uint32]*memRegion
	nextKey  uint32
	closed   bool
	regBytes int
	regPeak  int
	regCount int
}

type memItem struct {
	write bool
	msg   []byte
	imm   uint32
	n     int
}

type memLink struct {
	once sync.Once
	done chan struct{}
	err  error
}

func (l *memLink) fail(err error) {
	l.once.Do(func() { l.err = err; close(l.done) })
}

// MemPipe returns the two connected ends of an in-memory transport.
func MemPipe(a, b MemConfig) (*MemTransport, *MemTransport) {
	link := &memLink{done: make(chan struct{})}
	ea := newMemEnd(a, link)
	eb := newMemEnd(b, link)
	ea.peer, eb.peer = eb, ea
	return ea, eb
}

func newMemEnd(cfg MemConfig, link *memLink) *MemTransport {
	if cfg.MaxSlots <= 0 {
		cfg.MaxSlots = 64
	}
	return &MemTransport{
		cfg:     cfg,
		link:    link,
		in:      make(chan memItem, cfg.MaxSlots+ControlDepth),
		regions: map[uint32]*memRegion{},
		nextKey: 0x1000,
	}
}

func (t *MemTransport) err() error {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return ErrTransportClosed
	}
	select {
	case <-t.link.done:
		return t.link.err
	default:
		return nil
	}
}

// deliver puts it (and a held item after it) into the peer's queue.
func (t *MemTransport) deliver(ctx context.Context, it memItem, f Fault) error {
	switch f {
	case Drop:
		return nil
	case Break:
		t.link.fail(fmt.Errorf("%w: connection broken (injected fault)", ErrPeerGone))
		return t.link.err
	case Hold:
		if t.held == nil {
			t.held = &it
			return nil
		}
	}
	if err := t.push(ctx, it); err != nil {
		return err
	}
	if h := t.held; h != nil && f != Hold {
		t.held = nil
		return t.push(ctx, *h)
	}
	return nil
}

func (t *MemTransport) push(ctx context.Context, it memItem) error {
	select {
	case t.peer.in <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.link.done:
		return t.link.err
	}
}

// Send implements Transport.
func (t *MemTransport) Send(ctx context.Context, msg []byte) error {
	if err := t.err(); err != nil {
		return err
	}
	if len(msg) > MaxMessageSize {
		return fmt.Errorf("send: message of %d bytes exceeds %d", len(msg), MaxMessageSize)
	}
	m := append([]byte(nil), msg...)
	f := Deliver
	if t.cfg.Faults.Message != nil {
		f = t.cfg.Faults.Message(t.nmsg, m)
	}
	t.nmsg++
	return t.deliver(ctx, memItem{msg: m}, f)
}

// Receive implements Transport.
func (t *MemTransport) Receive(ctx context.Context) (Arrival, error) {
	if t.isClosed() {
		return Arrival{}, ErrTransportClosed
	}
	// What arrived before a break is still delivered, as completions already
	// in an RDMA completion queue are.
	select {
	case it := <-t.in:
		return it.arrival(), nil
	default:
	}
	select {
	case it := <-t.in:
		return it.arrival(), nil
	case <-ctx.Done():
		return Arrival{}, ctx.Err()
	case <-t.link.done:
		select {
		case it := <-t.in:
			return it.arrival(), nil
		default:
		}
		if t.isClosed() {
			return Arrival{}, ErrTransportClosed
		}
		return Arrival{}, t.link.err
	}
}

func (t *MemTransport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// Register implements Transport.
func (t *MemTransport) Register(size int, remoteWrite bool) (Region, error) {
	if size <= 0 || size > MaxWindow {
		return nil, fmt.Errorf("register %d bytes: size out of range", size)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrTransportClosed
	}
	t.nextKey++
	r := &memRegion{t: t, buf: make([]byte, size), key: t.nextKey, remote: remoteWrite}
	r.addr = uint64(r.key) << 32
	t.regions[r.key] = r
	t.regBytes += size
	t.regCount++
	t.regPeak = max(t.regPeak, t.regBytes)
	return r, nil
}

// WriteImm implements Transport. The copy happens at once; the notice is
// queued behind everything sent before it.
func (t *MemTransport) WriteImm(ctx context.Context, src Region, srcOff, n int, dst RemoteRegion, dstOff uint64, imm uint32) error {
	if err := t.err(); err != nil {
		return err
	}
	s, ok := src.(*memRegion)
	if !ok || s.t != t {
		return fmt.Errorf("write: source region is not from this transport")
	}
	t.mu.Lock()
	sbuf := s.buf
	t.mu.Unlock()
	if sbuf == nil || srcOff < 0 || n < 0 || srcOff+n > len(sbuf) {
		return fmt.Errorf("write: source [%d,+%d) outside the local region (or it is closed)", srcOff, n)
	}
	p := t.peer
	p.mu.Lock()
	r := p.regions[dst.RKey]
	var dbuf []byte
	if r != nil && r.remote && dst.Addr == r.addr && dstOff <= uint64(len(r.buf)) && uint64(n) <= uint64(len(r.buf))-dstOff {
		dbuf = r.buf[dstOff : dstOff+uint64(n)]
	}
	p.mu.Unlock()
	if dbuf == nil {
		err := fmt.Errorf("%w: write of %d bytes at %#x+%d with rkey %#x: no such exposed memory", ErrRemoteAccess, n, dst.Addr, dstOff, dst.RKey)
		t.link.fail(fmt.Errorf("%w: the connection broke on a remote access error", ErrPeerGone))
		return err
	}
	i := t.nwrite
	t.nwrite++
	f := Deliver
	if t.cfg.Faults.Write != nil {
		// The hook sees the destination after the copy (to corrupt it), or
		// decides to drop or break first; so copy into a scratch buffer.
		tmp := append([]byte(nil), sbuf[srcOff:srcOff+n]...)
		f = t.cfg.Faults.Write(i, tmp)
		if f == Drop || f == Break {
			return t.deliver(ctx, memItem{write: true, imm: imm, n: n}, f)
		}
		copy(dbuf, tmp)
	} else {
		copy(dbuf, sbuf[srcOff:srcOff+n])
	}
	return t.deliver(ctx, memItem{write: true, imm: imm, n: n}, f)
}

// Drain implements Transport: writes complete (or fail) within WriteImm, so
// nothing is ever outstanding.
func (t *MemTransport) Drain(ctx context.Context) error { return nil }

// MaxSlots implements Transport.
func (t *MemTransport) MaxSlots() int { return t.cfg.MaxSlots }

// Close implements Transport: the peer sees ErrPeerGone once it has
// received what was sent before.
func (t *MemTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	for _, r := range t.regions {
		t.regBytes -= len(r.buf)
		r.buf = nil
	}
	clear(t.regions)
	t.mu.Unlock()
	t.link.fail(fmt.Errorf("%w: the peer closed the connection", ErrPeerGone))
	return nil
}

// Registered returns the bytes registered now, the most registered at once,
// and how many registrations there were: what tests use to check that
// windows are bounded and released.
func (t *MemTransport) Registered() (now, peak, count int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.regBytes, t.regPeak, t.regCount
}

type memRegion struct {
	t      *MemTransport
	buf    []byte // nil once closed; guarded by t.mu
	key    uint32
	addr   uint64
	remote bool
}

func (r *memRegion) Bytes() []byte {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	return r.buf
}

func (r *memRegion) Remote() RemoteRegion {
	if !r.remote {
		return RemoteRegion{}
	}
	return RemoteRegion{Addr: r.addr, RKey: r.key, Len: uint64(len(r.buf))}
}

func (r *memRegion) Close() error {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	if r.buf == nil {
		return nil
	}
	r.t.regBytes -= len(r.buf)
	delete(r.t.regions, r.key)
	r.buf = nil
	return nil
}

// MemListener is a Listener of in-memory connections, for tests: Dial makes
// a MemPipe and hands its receiving end to Accept.
type MemListener struct {
	ch     chan *MemTransport
	done   chan struct{}
	once   sync.Once
	Config MemConfig // the accepted (receiving) ends' configuration
}

// NewMemListener returns a listening MemListener.
func NewMemListener() *MemListener {
	return &MemListener{ch: make(chan *MemTransport), done: make(chan struct{})}
}

// Dial connects to l: it returns the sending end once Accept took the other.
func (l *MemListener) Dial(ctx context.Context, cfg MemConfig) (*MemTransport, error) {
	s, r := MemPipe(cfg, l.Config)
	select {
	case l.ch <- r:
		return s, nil
	case <-l.done:
		return nil, fmt.Errorf("dial mem: %w: listener closed", ErrPeerGone)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Accept implements Listener.
func (l *MemListener) Accept(ctx context.Context) (Transport, error) {
	select {
	case t := <-l.ch:
		return t, nil
	case <-l.done:
		return nil, errListenerClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var errListenerClosed = errors.New("listener closed")

// Close implements Listener.
func (l *MemListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements Listener.
func (l *MemListener) Addr() string { return "mem" }

func (it memItem) arrival() Arrival {
	return Arrival{Write: it.write, Msg: it.msg, Imm: it.imm, Len: it.n}
}
