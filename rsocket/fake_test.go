// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmago/rdmago/uverbs"
)

// An in-memory RC "wire" for host tests: two ends whose RDMA WRITEs land in
// the other end's registered regions (bounds- and key-checked like an
// HCA's), whose WRITE WITH IMMEDIATE consume a posted receive (waiting, as
// with infinite RNR retries, when none is posted), in order, with
// completions on each end's CQ and events when armed.
type fakeWire struct {
	mu   sync.Mutex
	ends [2]*fakeEnd
}

type fakeRegion struct {
	base   uint64
	buf    []byte
	remote bool // remote write allowed
}

type fakeEnd struct {
	w         *fakeWire
	side      int
	regions   map[uint32]*fakeRegion
	nextKey   uint32
	cq        []uverbs.WC
	recvs     int
	inflight  []fakeMsg // posted toward the peer, not yet delivered
	armed     bool
	events    int           // events queued and not yet read (the channel's)
	ev        chan struct{} // readiness: a token per new event, as the netpoller's edge
	quiets    int           // waits that parked without reading
	gone      chan struct{}
	errState  bool
	closed    bool
	posted    int // send work requests posted
	sendsDone int // of those, completed (signalled or not, and successful)
	signaled  int // of those, with a completion
	scratch   []byte
	frees     int    // calls of free (the Conn's memory unmapped)
	closeErr  error  // what close returns (the CM's teardown errors)
	onWait    func() // if set (before the Conn waits), called by wait first
	hold      bool   // posted writes stay in flight (a slow wire) until release
}

type fakeMsg struct {
	wr   uverbs.SendWR
	data []byte
}

func newFakeWire() *fakeWire {
	w := &fakeWire{}
	for i := range w.ends {
		w.ends[i] = &fakeEnd{w: w, side: i, regions: map[uint32]*fakeRegion{}, nextKey: uint32(i+1) << 8,
			ev: make(chan struct{}, 1), gone: make(chan struct{}), cq: make([]uverbs.WC, 0, 4096)}
	}
	return w
}

func (e *fakeEnd) peer() *fakeEnd { return e.w.ends[1-e.side] }

// reg registers buf and returns its address and key.
func (e *fakeEnd) reg(buf []byte, remote bool) (uint64, uint32) {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	e.nextKey++
	k := e.nextKey
	base := uint64(k)<<32 | 0x1000
	e.regions[k] = &fakeRegion{base: base, buf: buf, remote: remote}
	return base, k
}

func (e *fakeEnd) region(key uint32, addr uint64, n int, remote bool) []byte {
	r := e.regions[key]
	if r == nil || (remote && !r.remote) || addr < r.base || addr-r.base+uint64(n) > uint64(len(r.buf)) {
		return nil
	}
	return r.buf[addr-r.base : addr-r.base+uint64(n)]
}

func (e *fakeEnd) complete(wc uverbs.WC) {
	e.cq = append(e.cq, wc)
	if e.armed {
		e.armed = false
		e.events++
		select {
		case e.ev <- struct{}{}:
		default:
		}
	}
}

func (e *fakeEnd) post(wrs []uverbs.SendWR) error {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	if e.closed {
		return uverbs.ErrClosed
	}
	for i := range wrs {
		e.posted++
		e.scratch = e.scratch[:0]
		wr := wrs[i]
		if e.errState {
			e.complete(uverbs.WC{WRID: wr.ID, Status: uverbs.WCWRFlushErr})
			continue
		}
		var src []byte
		if wr.Flags&uverbs.SendInline != 0 {
			src = wr.Inline
		} else {
			for _, s := range wr.SGL {
				b := e.region(s.LKey, s.Addr, int(s.Length), false)
				if b == nil {
					e.complete(uverbs.WC{WRID: wr.ID, Status: uverbs.WCLocProtErr})
					e.fail()
					return nil
				}
				if len(wr.SGL) == 1 {
					src = b
				} else {
					e.scratch = append(e.scratch, b...)
				}
			}
			if len(wr.SGL) > 1 {
				src = e.scratch
			}
		}
		if len(e.inflight) == 0 && !e.hold && e.deliver(&wr, src) {
			continue
		}
		wr.SGL, wr.Inline = nil, nil
		e.inflight = append(e.inflight, fakeMsg{wr: wr, data: append([]byte(nil), src...)})
	}
	return nil
}

// deliver performs one write at the peer; false if it must wait for a
// receive.
func (e *fakeEnd) deliver(wr *uverbs.SendWR, data []byte) bool {
	p := e.peer()
	if p.errState {
		e.complete(uverbs.WC{WRID: wr.ID, Status: uverbs.WCRetryExcErr})
		e.fail()
		return true
	}
	imm := wr.Opcode == uverbs.WRRDMAWriteWithImm
	if imm && p.recvs == 0 {
		return false
	}
	if len(data) > 0 {
		dst := p.region(wr.RKey, wr.RemoteAddr, len(data), true)
		if dst == nil {
			e.complete(uverbs.WC{WRID: wr.ID, Status: uverbs.WCRemAccessErr})
			e.fail()
			p.fail()
			return true
		}
		if len(dst) == sgeLen && p.isTargetSGL(wr.RKey) {
			// An SGE into a target SGL: in address order, the
			// length last (as DMA and rxe's memcpy fill it).
			storeSGE(dst, data)
		} else {
			copy(dst, data)
		}
	}
	if imm {
		p.recvs--
		p.complete(uverbs.WC{WRID: recvWRID, Status: uverbs.WCSuccess, Opcode: uverbs.WCRecvRDMAWithImm,
			ByteLen: uint32(len(data)), Imm: wr.Imm, Flags: uverbs.WCWithImm})
	}
	if wr.Flags&uverbs.SendSignaled != 0 {
		e.complete(uverbs.WC{WRID: wr.ID, Status: uverbs.WCSuccess, Opcode: uverbs.WCRDMAWrite})
		e.signaled++
	}
	e.sendsDone++
	return true
}

func (e *fakeEnd) isTargetSGL(key uint32) bool {
	r := e.regions[key]
	return r != nil && len(r.buf) == sglSize*sgeLen
}

func storeSGE(dst, src []byte) {
	p := unsafe.Pointer(&dst[0])
	atomic.StoreUint64((*uint64)(p), binary.NativeEndian.Uint64(src))
	atomic.StoreUint32((*uint32)(unsafe.Add(p, 8)), binary.NativeEndian.Uint32(src[8:]))
	atomic.StoreUint32((*uint32)(unsafe.Add(p, 12)), binary.NativeEndian.Uint32(src[12:]))
}

func (e *fakeEnd) pump() {
	for len(e.inflight) > 0 && !e.errState && !e.hold {
		m := &e.inflight[0]
		if !e.deliver(&m.wr, m.data) {
			return
		}
		e.inflight = e.inflight[1:]
	}
}

// setHold holds the end's writes in flight (on) or delivers them and
// later ones as the wire normally does (off).
func (e *fakeEnd) setHold(on bool) {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	e.hold = on
	e.pump()
}

// fail moves the end's QP to the error state: everything posted flushes.
func (e *fakeEnd) fail() {
	if e.errState {
		return
	}
	e.errState = true
	for range e.recvs {
		e.complete(uverbs.WC{WRID: recvWRID, Status: uverbs.WCWRFlushErr})
	}
	e.recvs = 0
	for _, m := range e.inflight {
		e.complete(uverbs.WC{WRID: m.wr.ID, Status: uverbs.WCWRFlushErr})
	}
	e.inflight = nil
}

func (e *fakeEnd) postRecv(n int) error {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	if e.errState {
		for range n {
			e.complete(uverbs.WC{WRID: recvWRID, Status: uverbs.WCWRFlushErr})
		}
		return nil
	}
	e.recvs += n
	e.peer().pump()
	return nil
}

func (e *fakeEnd) poll(wcs []uverbs.WC) int {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	n := copy(wcs, e.cq)
	e.cq = e.cq[:copy(e.cq, e.cq[n:])]
	return n
}

func (e *fakeEnd) arm() error {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	e.armed = true
	return nil
}

// wait is the channel's wait as uverbs does it on the netpoller: the old
// readiness is forgotten first (RawConn.Read's reset), then, unless quiet
// says no event is queued, an event is read at once if there is one;
// otherwise only a new event's readiness (or ctx) ends the park. A quiet
// that says so wrongly leaves the wait to ctx, as with the kernel.
func (e *fakeEnd) wait(ctx context.Context, quiet func() bool) error {
	if e.onWait != nil {
		e.onWait()
	}
	select {
	case <-e.ev:
	default:
	}
	if quiet != nil && quiet() {
		e.w.mu.Lock()
		e.quiets++
		e.w.mu.Unlock()
	} else if e.takeEvent() {
		return nil
	}
	for {
		select {
		case <-e.ev:
			if e.takeEvent() {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// takeEvent reads a queued event, if there is one.
func (e *fakeEnd) takeEvent() bool {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	if e.events == 0 {
		return false
	}
	e.events--
	return true
}

// sendsInFlight counts the writes posted and not yet delivered: as rxe's
// send ring, whose slot is freed when the request completes, signalled or
// not (a failed one completes with an error and leaves the wire).
func (e *fakeEnd) sendsInFlight() int {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	return len(e.inflight)
}

func (e *fakeEnd) ready() bool {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	return len(e.cq) > 0
}

func (e *fakeEnd) done() <-chan struct{} { return e.gone }

// disconnect is the CM's disconnect: both QPs go to the error state and
// both ends hear of it.
func (e *fakeEnd) disconnect() {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	for _, x := range e.w.ends {
		x.fail()
		select {
		case <-x.gone:
		default:
			close(x.gone)
		}
	}
}

func (e *fakeEnd) abort() {
	// Called with the Conn's lock held; the wire's lock is inner.
	e.disconnect()
}

func (e *fakeEnd) close() error {
	e.disconnect()
	e.w.mu.Lock()
	e.closed = true
	e.w.mu.Unlock()
	return e.closeErr
}

func (e *fakeEnd) free() error {
	e.w.mu.Lock()
	e.frees++
	e.w.mu.Unlock()
	return nil
}

// freed is how often the end's memory was unmapped.
func (e *fakeEnd) freed() int {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	return e.frees
}

// fakeMemory allocates and registers an rsocket's memory on e and posts
// its receives, as setup.run does on a real QP.
func fakeMemory(e *fakeEnd, cfg *config) *memory {
	m := &memory{
		sbuf: make([]byte, cfg.sbufSize+qpCtrlSize*maxCtrlMsg),
		rbuf: make([]byte, cfg.rbufSize),
		tsgl: make([]byte, sglSize*sgeLen),
	}
	m.sAddr, m.sLKey = e.reg(m.sbuf, false)
	m.rAddr, m.rKey = e.reg(m.rbuf, true)
	m.tAddr, m.tKey = e.reg(m.tsgl, true)
	e.postRecv(cfg.rqSize)
	return m
}

func testConfig(t testing.TB, o Options) config {
	t.Helper()
	cfg, err := o.config()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

var (
	fakeAddrA = &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 7471}
	fakeAddrB = &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 40000}
)

// fakePair connects two Conns over a fake wire, exchanging their
// connection data through its wire encoding.
func fakePair(t testing.TB, oa, ob Options) (a, b *Conn, w *fakeWire) {
	t.Helper()
	w = newFakeWire()
	ca, cb := testConfig(t, oa), testConfig(t, ob)
	ma, mb := fakeMemory(w.ends[0], &ca), fakeMemory(w.ends[1], &cb)
	da, db := roundTrip(t, ownConnData(ma, &ca)), roundTrip(t, ownConnData(mb, &cb))
	a = newConn(w.ends[0], ma, ca, db, oa.PollTime, fakeAddrA, fakeAddrB)
	b = newConn(w.ends[1], mb, cb, da, ob.PollTime, fakeAddrB, fakeAddrA)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b, w
}

func roundTrip(t testing.TB, d connData) connData {
	t.Helper()
	var b [56]byte // padded as the CM pads it
	d.marshal(b[:])
	got, err := parseConnData(b[:])
	if err != nil {
		t.Fatal(err)
	}
	if got != d {
		t.Fatalf("connection data %+v came back as %+v", d, got)
	}
	return got
}

// rawPeer is a hand-driven peer on the fake wire, for hostile-peer tests:
// it has a receive ring, a target SGL and whatever it sends.
type rawPeer struct {
	e    *fakeEnd
	mem  *memory
	cfg  config
	wrID uint64
}

// rawPair connects a Conn (end 0) with a raw peer (end 1) that announced
// peerData (nil: its honest connection data).
func rawPair(t testing.TB, o Options, edit func(*connData)) (*Conn, *rawPeer) {
	t.Helper()
	w := newFakeWire()
	ca, cb := testConfig(t, o), testConfig(t, Options{})
	ma, mb := fakeMemory(w.ends[0], &ca), fakeMemory(w.ends[1], &cb)
	db := ownConnData(mb, &cb)
	if edit != nil {
		edit(&db)
	}
	c := newConn(w.ends[0], ma, ca, db, 0, fakeAddrA, fakeAddrB)
	t.Cleanup(func() { c.Close() })
	return c, &rawPeer{e: w.ends[1], mem: mb, cfg: cb}
}

// send posts one RDMA WRITE (WITH IMMEDIATE when imm is not nil) of data
// to addr/key at the Conn.
func (p *rawPeer) send(data []byte, addr uint64, key uint32, imm *uint32) {
	p.wrID++
	wr := uverbs.SendWR{ID: p.wrID, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendInline, Inline: data, RemoteAddr: addr, RKey: key}
	if imm != nil {
		wr.Opcode, wr.Imm = uverbs.WRRDMAWriteWithImm, *imm
	}
	p.e.post([]uverbs.SendWR{wr})
}

func (p *rawPeer) msg(op, data uint32) { imm := msgSet(op, data); p.send(nil, 0, 0, &imm) }

// sendData writes data into the Conn's first receive buffer with a data
// message claiming n bytes.
func (p *rawPeer) sendData(c *Conn, off int, data []byte, n uint32) {
	imm := msgSet(opData, n)
	p.send(data, c.mem.rAddr+uint64(off), c.mem.rKey, &imm)
}

func (p *rawPeer) String() string { return fmt.Sprintf("raw peer (side %d)", p.e.side) }

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
