//go:build linux

package rdma

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"golang.org/x/sys/unix"
)

// Fault tests over real RDMA (one node: rxe loops back; with two nodes each
// node runs them on its own address). They complement the in-memory fault
// tests of package transfer with real queue pairs and real teardown.

// serving is a Receiver serving one listener in the background, recording
// every connection's outcome.
type serving struct {
	r      *transfer.Receiver
	ln     *Listener
	stop   context.CancelFunc
	done   chan error
	mu     sync.Mutex
	errs   []error
	reps   []*transfer.ConnReport
	notify chan struct{}
}

func serve(t *testing.T, ctx context.Context, port int, cfg Options, r *transfer.Receiver) *serving {
	t.Helper()
	env := labtest.Require(t)
	ln, err := Listen(ctx, addr(env.Addr, port), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	s := &serving{r: r, ln: ln, stop: stop, done: make(chan error, 1), notify: make(chan struct{}, 1024)}
	go func() {
		s.done <- r.Serve(sctx, ln, func(rep *transfer.ConnReport, err error) {
			s.mu.Lock()
			s.errs = append(s.errs, err)
			s.reps = append(s.reps, rep)
			s.mu.Unlock()
			s.notify <- struct{}{}
		})
	}()
	t.Cleanup(s.close)
	return s
}

func (s *serving) close() {
	s.stop()
	s.ln.Close()
	<-s.done
	s.done <- nil // idempotent
}

// waitConn waits for the n-th connection (1-based) to end and returns its
// outcome.
func (s *serving) waitConn(t *testing.T, n int) (*transfer.ConnReport, error) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		if len(s.errs) >= n {
			rep, err := s.reps[n-1], s.errs[n-1]
			s.mu.Unlock()
			return rep, err
		}
		s.mu.Unlock()
		select {
		case <-s.notify:
		case <-timeout:
			t.Fatalf("connection %d did not end within 30s", n)
		}
	}
}

// refused is how many connections ended turned away busy with handshakes.
func (s *serving) refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, err := range s.errs {
		if errors.Is(err, transfer.ErrHandshakeBusy) {
			n++
		}
	}
	return n
}

// alive fails the test if Serve has returned.
func (s *serving) alive(t *testing.T) {
	t.Helper()
	select {
	case err := <-s.done:
		s.done <- err
		t.Fatalf("receiver stopped serving: %v", err)
	default:
	}
}

// sendFile sends path to a as rdmacp send does (DialSend, a 10 s wait).
func sendFile(ctx context.Context, a string, s *transfer.Sender, path string) (*transfer.Report, error) {
	items, _, err := transfer.Plan(path)
	if err != nil {
		return nil, err
	}
	return s.DialSend(ctx, Dialer(a, &Options{}), 10*time.Second, items)
}

// TestLabSenderKilledAtRandomPoints kills the sending end (context
// cancelled, connection torn down without BYE, as when the process dies) at
// random points — during the handshake or mid-file —
// at least 20 times. After each kill before DONE the receiver must still
// serve, report the connection failed, and no file may exist under its
// final name (a kill after DONE may leave the verified file, which must be
// exact); afterwards a new transfer and a
// resumed one both succeed and verify.
func TestLabSenderKilledAtRandomPoints(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const port = 18640
	a := addr(env.Addr, port)
	dst := t.TempDir()
	srv := serve(t, ctx, port, Options{}, &transfer.Receiver{Dir: dst, Slots: 4, SlotSize: 4 << 10, IdleTimeout: 20 * time.Second})
	src := t.TempDir()
	const size = 96 << 10 // 24 chunks of 4 KiB: many places to die
	data := labContent("killed", size)
	os.WriteFile(filepath.Join(src, "k"), data, 0o600)
	items, _, _ := transfer.Plan(filepath.Join(src, "k"))

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	const want = 20
	kills, conns, early := 0, 0, 0
	for trial := 0; kills < want && trial < 3*want; trial++ {
		sctx, kill := context.WithCancel(ctx)
		var s transfer.Sender
		how := ""
		if trial%2 == 0 {
			at := rng.Int64N(size)
			how = fmt.Sprintf("after %d bytes", at)
			s.Progress = func(p transfer.Progress) {
				if p.FileDone >= at {
					kill()
				}
			}
		}
		tr, _, err := dialRetry(sctx, a, Options{}, 10*time.Second)
		if err != nil {
			t.Fatalf("trial %d: dial: %v", trial, err)
		}
		if trial%2 == 1 {
			// Anywhere from the handshake to the end of the file.
			d := time.Duration(rng.Int64N(int64(150 * time.Millisecond)))
			how = fmt.Sprintf("%v after connecting", d)
			time.AfterFunc(d, kill)
		}
		conns++
		rep, err := s.Send(sctx, tr, items)
		tr.Close() // what the kernel does when the process dies
		kill()
		_, rerr := srv.waitConn(t, conns)
		srv.alive(t)
		if b, ferr := os.ReadFile(filepath.Join(dst, "k")); ferr == nil {
			// The kill came after DONE: the receiver verified and committed
			// the file (the connection still ends without BYE). It must be
			// exact; it does not count as a kill.
			if !bytes.Equal(b, data) {
				t.Fatalf("trial %d (killed %s): %d bytes under the final name, receiver %v", trial, how, len(b), rerr)
			}
			os.Remove(filepath.Join(dst, "k"))
			continue
		}
		if err == nil && rep.OK(1) {
			t.Fatalf("trial %d: sender verified a file the receiver does not have", trial)
		}
		kills++
		if rep == nil || len(rep.Files) == 0 {
			early++
		}
		if rerr == nil {
			t.Errorf("trial %d (killed %s): receiver reports success for a killed sender", trial, how)
		}
	}
	if kills < want {
		t.Fatalf("only %d of the trials killed the sender before the end", kills)
	}
	t.Logf("%d kills over %d connections (%d killed during the handshake)", kills, conns, early)

	// A new transfer succeeds.
	os.WriteFile(filepath.Join(src, "fresh"), labContent("fresh", 50<<10), 0o600)
	if rep, err := sendFile(ctx, a, &transfer.Sender{}, filepath.Join(src, "fresh")); err != nil || !rep.OK(1) {
		t.Fatalf("fresh transfer after the kills: %v %+v", err, rep)
	}
	// A resumed transfer of the killed file succeeds.
	rep, err := sendFile(ctx, a, &transfer.Sender{Resume: true}, filepath.Join(src, "k"))
	if err != nil || !rep.OK(1) {
		t.Fatalf("resumed transfer: %v %+v", err, rep)
	}
	t.Logf("resumed from %d of %d bytes", rep.Files[0].Offset, size)
	if b, err := os.ReadFile(filepath.Join(dst, "k")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("resumed file: %d bytes (%v), want the %d sent", len(b), err, size)
	}
	noPartial(t, dst)
}

func noPartial(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, rdcp.PartialSuffix) {
			t.Errorf("partial copy left: %s", p)
		}
		return nil
	})
}

// TestLabDiskFull: the receiver's directory is a 1 MiB tmpfs and a 2 MiB
// file arrives. Both ends report "no space left" (ErrNoSpace), nothing is
// left under the final name or as a partial, and the receiver keeps serving
// (a small file then fits).
func TestLabDiskFull(t *testing.T) {
	env := labtest.Require(t)
	if os.Geteuid() != 0 {
		labtest.Missing(t, "mounting a tmpfs needs root (the lab runs tests as root)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dst := t.TempDir()
	if err := unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Fatalf("mount a 1 MiB tmpfs on %s: %v", dst, err)
	}
	defer unix.Unmount(dst, unix.MNT_DETACH)
	const port = 18641
	srv := serve(t, ctx, port, Options{}, labReceiver(dst))
	a := addr(env.Addr, port)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "big"), labContent("big", 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := sendFile(ctx, a, &transfer.Sender{}, filepath.Join(src, "big"))
	if err != nil && !errors.Is(err, transfer.ErrNoSpace) {
		t.Fatalf("sender: %v", err)
	}
	if rep == nil || len(rep.Files) != 1 || rep.Files[0].Verified || !errors.Is(rep.Files[0].Err, transfer.ErrNoSpace) {
		t.Fatalf("sender's result %+v (err %v), want ErrNoSpace", rep, err)
	}
	t.Logf("sender: %v", rep.Files[0].Err)
	if !strings.Contains(rep.Files[0].Err.Error(), "no space") {
		t.Errorf("sender's error %q does not say the disk is full", rep.Files[0].Err)
	}
	rrep, rerr := srv.waitConn(t, 1)
	var rfile error
	if rrep != nil && len(rrep.Files) == 1 {
		rfile = rrep.Files[0].Err
	}
	if !errors.Is(rfile, transfer.ErrNoSpace) && !errors.Is(rerr, transfer.ErrNoSpace) {
		t.Errorf("receiver: file error %v, connection error %v, want ErrNoSpace", rfile, rerr)
	}
	t.Logf("receiver: %v", rfile)
	if _, err := os.Stat(filepath.Join(dst, "big")); err == nil {
		t.Error("a file exists under the final name")
	}
	noPartial(t, dst)
	srv.alive(t)
	if err := os.WriteFile(filepath.Join(src, "small"), labContent("small", 100<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err := sendFile(ctx, a, &transfer.Sender{}, filepath.Join(src, "small")); err != nil || !rep.OK(1) {
		t.Errorf("small file after the full disk: %v %+v", err, rep)
	}
}

// TestLabSixteenSenders: 16 senders at once to one receiver (its default
// limit of connections, four times its default limit of handshakes); each
// connects as rdmacp send does (DialSend: those turned away busy with
// handshakes connect again), and every file arrives verified and
// byte-exact. Every sender's HELLO waits until the receiver has turned
// away the 12 connections beyond its handshake cap, so the burst
// overfills the cap whatever the timing.
func TestLabSixteenSenders(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const port, n, hands = 18642, 16, 4
	dst := t.TempDir()
	r := &transfer.Receiver{Dir: dst, Slots: 4, SlotSize: 16 << 10, IdleTimeout: time.Minute, MaxConns: n, MaxHandshakes: hands,
		Verify: transfer.VerifySHA256} // the senders' digests are checked against SHA-256 below
	srv := serve(t, ctx, port, Options{MaxSlots: 4}, r)
	a := addr(env.Addr, port)
	gate := make(chan struct{})
	go func() {
		defer close(gate)
		// At most 6 s: well within the receiver's handshake timeout
		// (10 s), which the admitted senders' held HELLOs must beat.
		deadline := time.Now().Add(6 * time.Second)
		for srv.refused() < n-hands && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	dial := Dialer(a, &Options{MaxSlots: 4})
	gated := func(ctx context.Context, wait time.Duration) (transfer.Transport, int, error) {
		tr, retries, err := dial(ctx, wait)
		if err != nil {
			return nil, retries, err
		}
		return &heldHello{Transport: tr, gate: gate}, retries, nil
	}
	src := t.TempDir()
	content := func(i int) []byte { return labContent(fmt.Sprintf("s%02d", i), 40<<10+i*1000) }
	var wg sync.WaitGroup
	errs := make([]error, n)
	busy := make([]int, n)
	start := make(chan struct{})
	for i := range n {
		p := filepath.Join(src, fmt.Sprintf("s%02d", i))
		os.WriteFile(p, content(i), 0o600)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			items, _, _ := transfer.Plan(p)
			rep, err := (&transfer.Sender{}).DialSend(ctx, gated, 30*time.Second, items)
			busy[i] = rep.BusyRetries
			if err == nil && !rep.OK(1) {
				err = rep.Files[0].Err
			}
			if err == nil && rep.Files[0].Digest != sha256.Sum256(content(i)) {
				err = errors.New("sender's digest differs from the content's")
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	total := 0
	for i, err := range errs {
		total += busy[i]
		if err != nil {
			t.Errorf("sender %d: %v", i, err)
		}
	}
	t.Logf("%d connections turned away busy with handshakes, each tried again", total)
	// The receiver served n connections and turned away the ones the
	// senders tried again.
	refused := 0
	for i := range n + total {
		_, err := srv.waitConn(t, i+1)
		switch {
		case errors.Is(err, transfer.ErrHandshakeBusy):
			refused++
		case err != nil:
			t.Errorf("receiver, a connection: %v", err)
		}
	}
	if refused != total || refused < n-hands {
		t.Errorf("the receiver turned away %d connections, the senders tried %d again; want equal and at least %d", refused, total, n-hands)
	}
	for i := range n {
		b, err := os.ReadFile(filepath.Join(dst, fmt.Sprintf("s%02d", i)))
		if err != nil || !bytes.Equal(b, content(i)) {
			t.Errorf("s%02d: %d bytes (%v), want %d", i, len(b), err, len(content(i)))
		}
	}
	srv.alive(t)
}

// heldHello is a Transport whose first message (HELLO) waits until gate
// is closed.
type heldHello struct {
	transfer.Transport
	gate <-chan struct{}
	sent bool
}

func (h *heldHello) Send(ctx context.Context, msg []byte) error {
	if !h.sent {
		h.sent = true
		select {
		case <-h.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Transport.Send(ctx, msg)
}

// rawRDMA speaks the protocol by hand over a real RDMA connection, to send
// a receiver what a correct sender never would.
type rawRDMA struct {
	t   *testing.T
	ctx context.Context
	tr  *Transport
}

func (p *rawRDMA) send(b []byte) {
	if err := p.tr.Send(p.ctx, b); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

func (p *rawRDMA) msg(m rdcp.Message) {
	b, err := rdcp.Encode(m)
	if err != nil {
		p.t.Fatalf("encode %v: %v", m.Type(), err)
	}
	p.send(b)
}

// next returns the receiver's next message; a WINDOW is a test failure
// (memory exposed to a misbehaving peer).
func (p *rawRDMA) next() (rdcp.Message, error) {
	a, err := p.tr.Receive(p.ctx)
	if err != nil {
		return nil, err
	}
	if a.Write {
		p.t.Fatal("the receiver wrote into the sender")
	}
	m, err := rdcp.Decode(a.Msg)
	if err == nil && m.Type() == rdcp.MsgWindow {
		p.t.Errorf("the receiver exposed a window: %+v", m)
	}
	return m, err
}

// TestLabMalformedPeers: malformed, oversized and out-of-order control
// messages, traversal names and wrong pre-shared keys over real RDMA. Each
// is answered with ERROR (or RESULT for a refused name) of the right code
// before any window is exposed; the receiver keeps serving and a correct
// sender then succeeds.
func TestLabMalformedPeers(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const port, pskPort = 18643, 18644
	dst := t.TempDir()
	srv := serve(t, ctx, port, Options{}, labReceiver(dst))
	key := []byte("the receiver's key, 32 bytes ..")
	pr := labReceiver(dst)
	pr.PSK = key
	psrv := serve(t, ctx, pskPort, Options{}, pr)

	hello := func(flags rdcp.HelloFlags) []byte {
		b, _ := rdcp.Encode(&rdcp.Hello{Role: rdcp.RoleSender, Flags: flags, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion})
		return b
	}
	goodHello := hello(0)
	header := func(typ rdcp.MsgType, n uint32) []byte {
		b := append([]byte{}, goodHello[:rdcp.HeaderSize]...)
		binary.BigEndian.PutUint16(b[6:], uint16(typ)) // after magic and version
		binary.BigEndian.PutUint32(b[8:], n)
		return b
	}
	if h, err := rdcp.DecodeHeader(header(rdcp.MsgDone, 0)); err != nil || h.Type != rdcp.MsgDone {
		t.Fatalf("test's header layout is wrong: %+v %v", h, err)
	}
	type step func(p *rawRDMA)
	raw := func(b []byte) step { return func(p *rawRDMA) { p.send(b) } }
	msg := func(m rdcp.Message) step { return func(p *rawRDMA) { p.msg(m) } }
	doHello := func(p *rawRDMA) {
		p.send(goodHello)
		if m, err := p.next(); err != nil || m.Type() != rdcp.MsgHello {
			p.t.Fatalf("HELLO answered with %v (%v)", m, err)
		}
	}
	cases := []struct {
		name  string
		psk   bool
		steps []step
		code  transfer.Code
	}{
		{"bad magic", false, []step{raw(append([]byte("XXXX"), goodHello[4:]...))}, transfer.CodeProtocol},
		{"oversized length", false, []step{raw(append(header(rdcp.MsgHello, 1<<20), make([]byte, 64)...))}, transfer.CodeProtocol},
		{"truncated", false, []step{raw(goodHello[:20])}, transfer.CodeProtocol},
		{"unknown type", false, []step{raw(header(99, 0))}, transfer.CodeProtocol},
		{"FILE before HELLO", false, []step{msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Size: 1 << 20, Name: "f"})}, transfer.CodeProtocol},
		{"DONE outside a transfer", false, []step{doHello, msg(&rdcp.Done{ID: 1})}, transfer.CodeProtocol},
		{"CREDIT from a sender", false, []step{doHello, msg(&rdcp.Credit{ID: 1, Consumed: 1})}, transfer.CodeProtocol},
		{"parent traversal", false, []step{doHello, msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Size: 1 << 20, Name: "../escape"})}, transfer.CodeProtocol},
		{"absolute name", false, []step{doHello, msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Size: 1 << 20, Name: "/etc/passwd"})}, transfer.CodeProtocol},
		{"no key to a keyed receiver", true, []step{raw(goodHello)}, transfer.CodeAuthRequired},
		{"forged AUTH", true, []step{raw(hello(rdcp.HelloPSK)), func(p *rawRDMA) {
			if m, err := p.next(); err != nil || m.Type() != rdcp.MsgHello {
				p.t.Fatalf("HELLO answered with %v (%v)", m, err)
			}
			p.msg(&rdcp.Auth{})
		}}, transfer.CodeAuthFailed},
	}
	conns := map[bool]int{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, p := srv, port
			if c.psk {
				s, p = psrv, pskPort
			}
			tr, _, err := dialRetry(ctx, addr(env.Addr, p), Options{}, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			conns[c.psk]++
			peer := &rawRDMA{t: t, ctx: ctx, tr: tr}
			for _, st := range c.steps {
				st(peer)
			}
			var got *rdcp.ErrorMsg
			for got == nil {
				m, err := peer.next()
				if err != nil {
					t.Fatalf("no ERROR before the connection ended: %v", err)
				}
				got, _ = m.(*rdcp.ErrorMsg)
			}
			if transfer.Code(got.Code) != c.code {
				t.Errorf("ERROR %v %q, want code %v", got.Code, got.Text, c.code)
			}
			if _, err := s.waitConn(t, conns[c.psk]); err == nil {
				t.Error("receiver reports success")
			}
			s.alive(t)
		})
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 0 || exists(filepath.Join(filepath.Dir(dst), "escape")) {
		t.Errorf("destination touched: %v", entries)
	}

	// A sender with the wrong key is refused; one with the right key and a
	// plain sender to the other receiver both succeed.
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "ok"), labContent("ok", 30<<10), 0o600)
	if _, err := sendFile(ctx, addr(env.Addr, pskPort), &transfer.Sender{PSK: []byte("another key, also 32 bytes long")}, filepath.Join(src, "ok")); !errors.Is(err, transfer.ErrAuthFailed) {
		t.Errorf("wrong key: %v, want ErrAuthFailed", err)
	}
	if rep, err := sendFile(ctx, addr(env.Addr, pskPort), &transfer.Sender{PSK: key}, filepath.Join(src, "ok")); err != nil || !rep.OK(1) {
		t.Errorf("right key: %v %+v", err, rep)
	}
	os.Remove(filepath.Join(dst, "ok"))
	if rep, err := sendFile(ctx, addr(env.Addr, port), &transfer.Sender{}, filepath.Join(src, "ok")); err != nil || !rep.OK(1) {
		t.Errorf("plain sender after the malformed ones: %v %+v", err, rep)
	}
	srv.alive(t)
	psrv.alive(t)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
