package transfer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// A sender that rewrites a slot after the receiver took its chunk (a plain
// RDMA WRITE into the window, which stays exposed) must not make the
// receiver attest bytes it did not write: what is on disk under a verified
// name hashes to the digest reported, and here is the source's content.
// Under both verifications: the SHA-256 of the file, and the CRC32C checked
// per chunk (on the pool's goroutines) and combined.
func TestRewrittenSlotCannotLie(t *testing.T) {
	for _, v := range []transfer.Verify{transfer.VerifySHA256, transfer.VerifyCRC32C} {
		t.Run(v.String(), func(t *testing.T) { testRewrittenSlotCannotLie(t, v) })
	}
}

func testRewrittenSlotCannotLie(t *testing.T, v transfer.Verify) {
	for _, slotSize := range []int{tSlotSize, 2 * transfer.ParallelHashMin} {
		data := randBytes(23, 6*slotSize+17)
		src := tree(t, t.TempDir(), map[string][]byte{"f": data})
		dst := t.TempDir()
		r := &transfer.Receiver{Dir: dst, Slots: 3, SlotSize: slotSize, IdleTimeout: 5 * time.Second, Verify: v}

		var mu sync.Mutex
		var win *rdcp.Window
		rcfg := &transfertest.Options{Faults: transfertest.Faults{Message: func(_ int, msg []byte) transfertest.Fault {
			if m, err := rdcp.Decode(msg); err == nil {
				if w, ok := m.(*rdcp.Window); ok {
					mu.Lock()
					win = w
					mu.Unlock()
				}
			}
			return transfertest.Deliver
		}}}
		st, rt := transfertest.Pipe(&transfertest.Options{}, rcfg)
		garbage := bytes.Repeat([]byte{0xA5}, slotSize)
		rewrites := 0
		transfer.SetWriteFault(r, func(_ string, off int64, n int) error {
			// Between the receiver's check of chunk k and its write:
			// rewrite k's slot (only: later slots hold chunks in flight).
			// With CRC32C this runs on the pool's goroutines.
			mu.Lock()
			defer mu.Unlock()
			w := win
			if w == nil {
				return nil
			}
			stride := uint64(rdcp.Stride(rdcp.Verify(v), int(w.SlotSize)))
			rem := transfer.RemoteRegion{Addr: w.Addr, RKey: w.RKey, Len: uint64(w.Slots) * stride}
			slot := uint64(off) / uint64(w.SlotSize) % uint64(w.Slots)
			if err := st.WriteRaw(rem, slot*stride, garbage[:n]); err != nil {
				t.Errorf("raw write: %v", err)
				return nil
			}
			rewrites++
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		done := make(chan struct{})
		var rrep *transfer.ConnReport
		go func() {
			defer close(done)
			defer rt.Close()
			rrep, _ = r.ServeConn(ctx, rt)
		}()
		srep, serr := (&transfer.Sender{}).Send(ctx, st, plan(t, filepath.Join(src, "f")))
		st.Close()
		<-done
		cancel()
		mu.Lock()
		rewrote := rewrites
		mu.Unlock()
		if rewrote == 0 {
			t.Fatalf("slot %d: the fault never ran", slotSize)
		}
		if serr != nil {
			t.Fatalf("slot %d: send: %v", slotSize, serr)
		}
		got, err := os.ReadFile(filepath.Join(dst, "f"))
		for _, f := range append(srep.Files, rrep.Files...) {
			if !f.Verified {
				continue
			}
			if err != nil {
				t.Fatalf("slot %d: verified but not on disk: %v", slotSize, err)
			}
			switch v {
			case transfer.VerifySHA256:
				if sha256.Sum256(got) != f.Digest {
					t.Errorf("slot %d: reported verified with %x, the file on disk hashes to %x", slotSize, f.Digest, sha256.Sum256(got))
				}
			case transfer.VerifyCRC32C:
				if f.Verify != v || rdcp.CRC32C(got) != f.CRC32C {
					t.Errorf("slot %d: reported verified (%v) with CRC32C %08x, the file on disk sums to %08x", slotSize, f.Verify, f.CRC32C, rdcp.CRC32C(got))
				}
			}
		}
		if err == nil && !bytes.Equal(got, data) {
			t.Errorf("slot %d: the file on disk differs from the source", slotSize)
		}
		if !srep.OK(1) {
			t.Errorf("slot %d: not verified: %v", slotSize, srep.Files)
		}
	}
}

// A peer that connects and stays silent, or sends HELLO and never AUTH, is
// ended by the handshake timeout, long before the idle timeout.
func TestHandshakeDeadline(t *testing.T) {
	for _, c := range []struct {
		name string
		psk  []byte
		step func(p *rawPeer)
	}{
		{"silent", nil, func(*rawPeer) {}},
		{"hello then silent", []byte("0123456789abcdef0123456789abcdef"), func(p *rawPeer) {
			p.send(&rdcp.Hello{Role: rdcp.RoleSender, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion, Flags: rdcp.HelloPSK})
			p.expect(rdcp.MsgHello)
		}},
	} {
		r := smallReceiver(t.TempDir())
		r.PSK = c.psk
		r.IdleTimeout = time.Hour
		r.HandshakeTimeout = 200 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
		done := make(chan error, 1)
		go func() {
			_, err := r.ServeConn(ctx, rt)
			rt.Close()
			done <- err
		}()
		p := &rawPeer{t: t, tr: st, ctx: ctx}
		c.step(p)
		select {
		case err := <-done:
			if !errors.Is(err, transfer.ErrProtocol) || !strings.Contains(err.Error(), "did not finish within") {
				t.Errorf("%s: receiver ended with %v, want the handshake deadline", c.name, err)
			}
			if e := p.errorMsg(); !strings.Contains(e.Text, "handshake") {
				t.Errorf("%s: peer told %q", c.name, e.Text)
			}
		case <-ctx.Done():
			t.Errorf("%s: still served after a minute (handshake timeout 200ms)", c.name)
		}
		st.Close()
		cancel()
	}
}

// Connections in their handshake have their own cap below MaxConns: silent
// peers cannot take every slot from the authenticated sender.
func TestHandshakeCap(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(80, 3*tSlotSize)})
	r := smallReceiver(t.TempDir())
	r.MaxConns = 4
	r.MaxHandshakes = 2
	r.IdleTimeout = time.Hour
	r.HandshakeTimeout = time.Hour
	r.HandshakeGrace = -1 // silent peers keep their places (see TestSilentHandshakesEvicted)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := transfertest.NewListener()
	defer ln.Close()
	go r.Serve(ctx, ln, nil)
	// One sender mid-session (handshake done), then silent peers, each
	// counted before the next connects (Serve starts each ServeConn in a
	// goroutine of its own: which of two connects counts first is not
	// settled by the order of the Dials).
	a, _ := ln.Dial(ctx, &transfertest.Options{})
	defer a.Close()
	(&rawPeer{t: t, tr: a, ctx: ctx}).hello()
	waitHandshakes(t, r, 0)
	var silent []*transfertest.Transport
	for i := range 2 {
		s, _ := ln.Dial(ctx, &transfertest.Options{})
		defer s.Close()
		silent = append(silent, s)
		waitHandshakes(t, r, i+1)
	}
	// The cap is full: the next one is refused at once, busy with
	// handshakes.
	c, _ := ln.Dial(ctx, &transfertest.Options{})
	defer c.Close()
	if e := (&rawPeer{t: t, tr: c, ctx: ctx}).errorMsg(); e.Code != rdcp.CodeHandshakeBusy || !strings.Contains(e.Text, "handshake") {
		t.Errorf("third silent connection: %v %q, want busy with handshakes", e.Code, e.Text)
	}
	// One silent peer leaves: an honest sender gets in while the other
	// still holds its slot (MaxConns has room: 1 + 1 + 1 of 4), connecting
	// again while the closed peer's slot is being released.
	silent[0].Close()
	rep, err := (&transfer.Sender{}).DialSend(ctx, memDialer(ln, &transfertest.Options{}), 10*time.Second, plan(t, filepath.Join(src, "f")))
	if err != nil {
		t.Fatalf("honest sender: %v", err)
	}
	allVerified(t, rep, 1)
}

// waitHandshakes waits (at most 10 s) until r counts n connections in
// their handshake.
func waitHandshakes(t *testing.T, r *transfer.Receiver, n int) {
	t.Helper()
	for i := 0; transfer.Handshakes(r) != n; i++ {
		if i == 1000 {
			t.Fatalf("the receiver counts %d connections in their handshake, want %d", transfer.Handshakes(r), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A connection's report stays bounded whatever the peer sends: the counts
// cover every FILE, the list keeps the first results and failures.
func TestReportBounded(t *testing.T) {
	r := smallReceiver(t.TempDir())
	var streamed int
	r.OnFile = func(transfer.FileResult) { streamed++ }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
	type res struct {
		rep *transfer.ConnReport
		err error
	}
	done := make(chan res, 1)
	go func() {
		rep, err := r.ServeConn(ctx, rt)
		rt.Close()
		done <- res{rep, err}
	}()
	p := &rawPeer{t: t, tr: st, ctx: ctx}
	p.hello()
	const n = 3000
	for i := range n {
		// Rejected at once (too large): what a flood of FILEs does.
		p.send(&rdcp.File{ID: uint32(i + 1), Kind: rdcp.KindFile, Mode: 0o644, Size: 1 << 50, Name: "f"})
		if m := p.expect(rdcp.MsgResult).(*rdcp.Result); m.Code != rdcp.CodeTooLarge {
			t.Fatalf("FILE %d: %v", i, m.Code)
		}
	}
	p.send(&rdcp.Bye{})
	p.expect(rdcp.MsgBye)
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	rep := got.rep
	if rep.Items != n || rep.Verified != 0 || rep.OK() || streamed != n {
		t.Errorf("items %d verified %d ok %v streamed %d, want %d, 0, false, %d", rep.Items, rep.Verified, rep.OK(), streamed, n, n)
	}
	if len(rep.Files) > 2*transfer.ReportFiles || len(rep.Files)+rep.Omitted != n {
		t.Errorf("report keeps %d results and omits %d of %d", len(rep.Files), rep.Omitted, n)
	}
	st.Close()
}

// fakeReceiver runs the receiving end by hand against a Sender: it answers
// HELLO with hello, and the first FILE with RESUME-OFFSET 0 and window (its
// address and key filled in from a region it registers when reg is set),
// then reads nothing more. It returns the sender's outcome.
func fakeReceiver(t *testing.T, s *transfer.Sender, size int, rcfg *transfertest.Options, hello *rdcp.Hello, window *rdcp.Window, reg bool) (*transfer.Report, *transfertest.Transport, error) {
	t.Helper()
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(90, size)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, rt := transfertest.Pipe(&transfertest.Options{}, rcfg)
	defer rt.Close()
	p := &rawPeer{t: t, tr: rt, ctx: ctx}
	go func() {
		if _, err := p.recv(); err != nil { // HELLO
			return
		}
		p.send(hello)
		m, err := p.recv()
		if err != nil {
			return
		}
		if _, ok := m.(*rdcp.File); !ok {
			return
		}
		p.send(&rdcp.ResumeOffset{ID: 1})
		if reg {
			w, err := rt.Register(int(window.Slots*window.SlotSize), true)
			if err != nil {
				return
			}
			window.Addr, window.RKey = w.Remote().Addr, w.Remote().RKey
		}
		p.send(window)
		<-ctx.Done() // and read nothing
	}()
	rep, err := s.Send(ctx, st, plan(t, filepath.Join(src, "f")))
	if ctx.Err() != nil {
		t.Errorf("the sender was still blocked after a minute: %v", err)
	}
	st.Close()
	return rep, st, err
}

// A receiver that announces a larger window than the sender asked for is
// refused before the sender stages anything.
func TestSenderCapsWindow(t *testing.T) {
	hello := &rdcp.Hello{Role: rdcp.RoleReceiver, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion, Slots: 64, SlotSize: 1 << 20}
	window := &rdcp.Window{ID: 1, Slots: 64, SlotSize: 1 << 20}
	_, st, err := fakeReceiver(t, &transfer.Sender{Slots: 2, SlotSize: 4096, IdleTimeout: 5 * time.Second}, 1<<20, &transfertest.Options{}, hello, window, false)
	if !errors.Is(err, transfer.ErrProtocol) {
		t.Errorf("sender: %v, want a protocol error for the oversized window", err)
	}
	if _, peak, _ := st.Registered(); peak > 2*4096 {
		t.Errorf("the sender staged %d bytes after asking for 2×4096", peak)
	}
}

// A receiver that announces a window and stops reading (its queue fills,
// the sender's writes block) makes the sender fail with ErrPeerGone within
// its idle timeout, not hang.
func TestReceiverStopsReading(t *testing.T) {
	hello := &rdcp.Hello{Role: rdcp.RoleReceiver, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion, Slots: 64, SlotSize: 4096}
	window := &rdcp.Window{ID: 1, Slots: 64, SlotSize: 4096}
	_, _, err := fakeReceiver(t, &transfer.Sender{IdleTimeout: 300 * time.Millisecond}, 100*4096, &transfertest.Options{MaxSlots: 4}, hello, window, true)
	if !errors.Is(err, transfer.ErrPeerGone) || !strings.Contains(err.Error(), "taken nothing") {
		t.Errorf("sender: %v, want ErrPeerGone (the peer takes nothing)", err)
	}
}

// Without hard links, a file that appears under the name just before the
// commit is not overwritten: the verified copy stays as the partial.
func TestCommitNoReplaceWithoutLinks(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(91, 5000)})
	dst := t.TempDir()
	r := smallReceiver(dst)
	transfer.SetNoHardLinks(r, func(to string) {
		os.WriteFile(filepath.Join(dst, to), []byte("theirs"), 0o644)
	})
	o := pair(t, r, &transfer.Sender{}, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil {
		t.Fatal(o.serr)
	}
	if f := o.srep.Files[0]; f.Verified || !errors.Is(f.Err, transfer.ErrExists) {
		t.Errorf("result: verified=%v %v, want exists", f.Verified, f.Err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "theirs" {
		t.Errorf("the file that appeared was overwritten: %q", b)
	}
	if !exists(filepath.Join(dst, rdcp.PartialName("f"))) {
		t.Error("the verified copy was not kept")
	}

	// And without the intruder the commit renames.
	dst = t.TempDir()
	r = smallReceiver(dst)
	transfer.SetNoHardLinks(r, nil)
	o = pair(t, r, &transfer.Sender{}, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	sameTree(t, src, dst)
}

// With a pre-shared key, a control message altered on the way after AUTH
// (here the FILE's mode, made world-writable) ends the connection instead
// of taking effect.
func TestSessionMACBindsMessages(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(92, 3000)})
	dst := t.TempDir()
	r := smallReceiver(dst)
	r.PSK = key
	alter := &transfertest.Options{Faults: transfertest.Faults{Message: func(_ int, msg []byte) transfertest.Fault {
		body := msg
		m, err := rdcp.Decode(body)
		if err != nil && len(msg) > rdcp.MACSize {
			body = msg[:len(msg)-rdcp.MACSize]
			m, err = rdcp.Decode(body)
		}
		if f, ok := m.(*rdcp.File); ok && err == nil {
			f.Mode = 0o777
			b, _ := rdcp.Encode(f)
			copy(body, b)
		}
		return transfertest.Deliver
	}}}
	o := pair(t, r, &transfer.Sender{PSK: key}, plan(t, filepath.Join(src, "f")), alter, &transfertest.Options{})
	if !errors.Is(o.rerr, transfer.ErrAuthFailed) {
		t.Errorf("receiver: %v, want the session MAC to fail", o.rerr)
	}
	if fi, err := os.Stat(filepath.Join(dst, "f")); err == nil {
		t.Errorf("the altered FILE took effect: %v", fi.Mode())
	}
	if o.srep.OK(1) {
		t.Error("the sender reports success")
	}
}

// --resume of a partial copy whose hashing outlasts the idle timeout: both
// ends send KEEPALIVEs while they hash, and the copy completes.
func TestResumeKeepAlive(t *testing.T) {
	const prefix = 12 << 20
	data := randBytes(93, prefix+5000)
	src := tree(t, t.TempDir(), map[string][]byte{"f": data})
	dst := t.TempDir()
	if err := os.WriteFile(filepath.Join(dst, rdcp.PartialName("f")), data[:prefix], 0o600); err != nil {
		t.Fatal(err)
	}
	// Each 1 MiB chunk takes 40 ms: 12 chunks, about 0.5 s at each end,
	// against an idle timeout of 250 ms.
	r := smallReceiver(dst)
	r.IdleTimeout = 250 * time.Millisecond
	s := &transfer.Sender{Resume: true, IdleTimeout: 250 * time.Millisecond}
	transfer.SetHashChunkHook(r, s, func() { time.Sleep(40 * time.Millisecond) })
	o := pair(t, r, s, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	if f := o.srep.Files[0]; f.Offset != prefix {
		t.Errorf("resumed at %d, want %d", f.Offset, prefix)
	}
	sameTree(t, src, dst)
}
