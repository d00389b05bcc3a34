// Package transfertest has test doubles for package transfer: Pipe, an
// in-memory Transport pair that enforces what RDMA does (bounded queues,
// writes only into open regions) and injects faults (Faults), and Listener,
// which hands Pipe ends to a transfer.Receiver. No RDMA device is needed.
package transfertest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmago/rdmago/transfer"
)

// Options configures one end of a Pipe; nil or the zero value means every
// default.
type Options struct {
	// MaxSlots is the end's MaxSlots (default 64): its inbound queue holds
	// that many writes plus transfer.ControlDepth messages; a full queue blocks the
	// peer's Send and WriteImm, as an RC queue pair retries on RNR.
	MaxSlots int
	// Faults are applied to what this end sends.
	Faults Faults
}

// Faults inject failures into what one end of a Pipe sends. A nil hook
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

// Transport is one end of an in-memory transfer.Transport (Pipe): control
// messages and write notices go through a bounded queue, writes copy straight
// into the peer's registered memory. It enforces what RDMA does: writes only
// into open regions, within bounds; a violation breaks the connection with
// transfer.ErrRemoteAccess.
type Transport struct {
	cfg  Options
	peer *Transport
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

// Pipe returns the two connected ends of an in-memory transport, a's
// configured by a and b's by b (nil: every default). The caller closes
// both.
func Pipe(a, b *Options) (*Transport, *Transport) {
	link := &memLink{done: make(chan struct{})}
	ea := newMemEnd(a.value(), link)
	eb := newMemEnd(b.value(), link)
	ea.peer, eb.peer = eb, ea
	return ea, eb
}

// value is o's settings (nil: the zero Options).
func (o *Options) value() Options {
	if o == nil {
		return Options{}
	}
	return *o
}

func newMemEnd(cfg Options, link *memLink) *Transport {
	if cfg.MaxSlots <= 0 {
		cfg.MaxSlots = 64
	}
	return &Transport{
		cfg:     cfg,
		link:    link,
		in:      make(chan memItem, cfg.MaxSlots+transfer.ControlDepth),
		regions: map[uint32]*memRegion{},
		nextKey: 0x1000,
	}
}

func (t *Transport) err() error {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return transfer.ErrTransportClosed
	}
	select {
	case <-t.link.done:
		return t.link.err
	default:
		return nil
	}
}

// deliver puts it (and a held item after it) into the peer's queue.
func (t *Transport) deliver(ctx context.Context, it memItem, f Fault) error {
	switch f {
	case Drop:
		return nil
	case Break:
		t.link.fail(fmt.Errorf("%w: connection broken (injected fault)", transfer.ErrPeerGone))
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

func (t *Transport) push(ctx context.Context, it memItem) error {
	select {
	case t.peer.in <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.link.done:
		return t.link.err
	}
}

// InjectWrite queues at the peer the notice of a write of n bytes with
// immediate imm that wrote no data, bypassing Faults and the connection's
// state: what a misbehaving peer's write looks like to the receiving loop.
func (t *Transport) InjectWrite(ctx context.Context, imm uint32, n int) error {
	return t.push(ctx, memItem{write: true, imm: imm, n: n})
}

// WriteRaw writes data into the peer's exposed memory at dst+off with no
// immediate and no notice, bypassing Faults: what a plain RDMA WRITE from a
// misbehaving peer does to a window while it stays exposed. Outside an open
// remote-writable region it fails with transfer.ErrRemoteAccess (and, as on
// RDMA, breaks the connection).
func (t *Transport) WriteRaw(dst transfer.RemoteRegion, off uint64, data []byte) error {
	if err := t.err(); err != nil {
		return err
	}
	dbuf, err := t.remote("raw write", dst, off, len(data))
	if err != nil {
		return err
	}
	copy(dbuf, data)
	return nil
}

// remote is the n bytes at dst+off of the peer's exposed memory. Outside
// an open remote-writable region it breaks the connection, as RDMA does,
// and fails with transfer.ErrRemoteAccess (op says what was refused).
func (t *Transport) remote(op string, dst transfer.RemoteRegion, off uint64, n int) ([]byte, error) {
	p := t.peer
	p.mu.Lock()
	r := p.regions[dst.RKey]
	var b []byte
	if r != nil && r.remote && dst.Addr == r.addr && off <= uint64(len(r.buf)) && uint64(n) <= uint64(len(r.buf))-off {
		b = r.buf[off : off+uint64(n)]
	}
	p.mu.Unlock()
	if b == nil {
		t.link.fail(fmt.Errorf("%w: the connection broke on a remote access error", transfer.ErrPeerGone))
		return nil, fmt.Errorf("%w: %s of %d bytes at %#x+%d with rkey %#x: no such exposed memory", transfer.ErrRemoteAccess, op, n, dst.Addr, off, dst.RKey)
	}
	return b, nil
}

// Send implements transfer.Transport.
func (t *Transport) Send(ctx context.Context, msg []byte) error {
	if err := t.err(); err != nil {
		return err
	}
	if len(msg) > transfer.MaxMessageSize {
		return fmt.Errorf("send: message of %d bytes exceeds %d", len(msg), transfer.MaxMessageSize)
	}
	m := append([]byte(nil), msg...)
	f := Deliver
	if t.cfg.Faults.Message != nil {
		f = t.cfg.Faults.Message(t.nmsg, m)
	}
	t.nmsg++
	return t.deliver(ctx, memItem{msg: m}, f)
}

// Receive implements transfer.Transport.
func (t *Transport) Receive(ctx context.Context) (transfer.Arrival, error) {
	if t.isClosed() {
		return transfer.Arrival{}, transfer.ErrTransportClosed
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
		return transfer.Arrival{}, ctx.Err()
	case <-t.link.done:
		select {
		case it := <-t.in:
			return it.arrival(), nil
		default:
		}
		if t.isClosed() {
			return transfer.Arrival{}, transfer.ErrTransportClosed
		}
		return transfer.Arrival{}, t.link.err
	}
}

func (t *Transport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// Register implements transfer.Transport.
func (t *Transport) Register(size int, remoteWrite bool) (transfer.Region, error) {
	if size <= 0 || size > transfer.MaxWindow {
		return nil, fmt.Errorf("register %d bytes: size out of range", size)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, transfer.ErrTransportClosed
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

// WriteImm implements transfer.Transport. The copy happens at once; the notice is
// queued behind everything sent before it.
func (t *Transport) WriteImm(ctx context.Context, src transfer.Region, srcOff, n int, dst transfer.RemoteRegion, dstOff uint64, imm uint32) error {
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
	dbuf, err := t.remote("write", dst, dstOff, n)
	if err != nil {
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

// Drain implements transfer.Transport: writes complete (or fail) within WriteImm, so
// nothing is ever outstanding.
func (t *Transport) Drain(ctx context.Context) error { return nil }

// MaxSlots implements transfer.Transport.
func (t *Transport) MaxSlots() int { return t.cfg.MaxSlots }

// Close implements transfer.Transport: the peer sees transfer.ErrPeerGone once it has
// received what was sent before.
func (t *Transport) Close() error {
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
	t.link.fail(fmt.Errorf("%w: the peer closed the connection", transfer.ErrPeerGone))
	return nil
}

// Registered returns the bytes registered now, the most registered at once,
// and how many registrations there were: what tests use to check that
// windows are bounded and released.
func (t *Transport) Registered() (now, peak, count int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.regBytes, t.regPeak, t.regCount
}

type memRegion struct {
	t      *Transport
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

func (r *memRegion) Remote() transfer.RemoteRegion {
	if !r.remote {
		return transfer.RemoteRegion{}
	}
	return transfer.RemoteRegion{Addr: r.addr, RKey: r.key, Len: uint64(len(r.buf))}
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

// Listener is a transfer.Listener of in-memory connections: Dial makes a
// Pipe and hands its receiving end to Accept.
type Listener struct {
	ch      chan *Transport
	done    chan struct{}
	once    sync.Once
	Options Options // the accepted (receiving) ends' options
}

// NewListener returns a listening Listener.
func NewListener() *Listener {
	return &Listener{ch: make(chan *Transport), done: make(chan struct{})}
}

// Dial connects to l: it returns the sending end once Accept took the other.
func (l *Listener) Dial(ctx context.Context, opts *Options) (*Transport, error) {
	s, r := Pipe(opts, &l.Options)
	select {
	case l.ch <- r:
		return s, nil
	case <-l.done:
		return nil, fmt.Errorf("dial mem: %w: listener closed", transfer.ErrPeerGone)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Accept implements transfer.Listener; after Close it fails with
// ErrListenerClosed.
func (l *Listener) Accept(ctx context.Context) (transfer.Transport, error) {
	select {
	case t := <-l.ch:
		return t, nil
	case <-l.done:
		return nil, ErrListenerClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ErrListenerClosed is what Listener.Accept returns once the Listener is
// closed.
var ErrListenerClosed = errors.New("listener closed")

// Close implements transfer.Listener.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements transfer.Listener.
func (l *Listener) Addr() string { return "mem" }

func (it memItem) arrival() transfer.Arrival {
	return transfer.Arrival{Write: it.write, Msg: it.msg, Imm: it.imm, Len: it.n}
}
