package transfer_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// With the default limits (MaxConns 16, so 4 handshakes at once, and a 10 s
// handshake timeout) four peers that connect and stay silent no longer turn
// honest senders away for the whole timeout: a new connection takes the
// place of the oldest handshake silent for longer than HandshakeGrace, and
// that peer is told to connect again. Fresh handshakes keep their places:
// a burst of connections cannot push out handshakes under way.
func TestSilentHandshakesEvicted(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(91, 3*tSlotSize)})
	r := &transfer.Receiver{Dir: t.TempDir(), PSK: key}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := transfertest.NewListener()
	defer ln.Close()
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, ln, nil) }()

	// Four silent peers (every other one after a HELLO), each counted
	// before the next connects.
	start := time.Now()
	var silent []*rawPeer
	for i := range 4 {
		tr, err := ln.Dial(ctx, &transfertest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		p := &rawPeer{t: t, tr: tr, ctx: ctx}
		if i%2 == 1 {
			p.send(&rdcp.Hello{Role: rdcp.RoleSender, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion, Flags: rdcp.HelloPSK})
			p.expect(rdcp.MsgHello)
		}
		silent = append(silent, p)
		waitHandshakes(t, r, i+1)
	}
	last := time.Now() // the last silent peer's HELLO

	// A fifth connection while all four are fresh: refused at once.
	c, err := ln.Dial(ctx, &transfertest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cctx, ccancel := context.WithTimeout(ctx, 500*time.Millisecond)
	m, err := (&rawPeer{t: t, tr: c, ctx: cctx}).recv()
	ccancel()
	if e, ok := m.(*rdcp.ErrorMsg); err != nil || !ok || e.Code != rdcp.CodeHandshakeBusy {
		// Admitted (no ERROR): only a machine so slow that the first
		// silent peer was already past its grace may do that.
		if time.Since(start) < transfer.DefaultHandshakeGrace {
			t.Errorf("a connection while %d fresh handshakes hold the cap: %v %v, want ERROR busy with handshakes", transfer.Handshakes(r), m, err)
		}
	}

	// Past the grace, an honest sender takes the oldest silent peer's
	// place at its first attempt, long before the handshake timeout.
	time.Sleep(time.Until(last.Add(transfer.DefaultHandshakeGrace + 100*time.Millisecond)))
	rep, err := (&transfer.Sender{PSK: key}).DialSend(ctx, memDialer(ln, &transfertest.Options{}), 3*time.Second, plan(t, filepath.Join(src, "f")))
	if err != nil {
		t.Fatalf("honest sender behind %d silent handshakes: %v", len(silent), err)
	}
	allVerified(t, rep, 1)
	if rep.BusyRetries != 0 {
		t.Errorf("honest sender turned away %d times", rep.BusyRetries)
	}
	e := silent[0].errorMsg()
	if e.Code != rdcp.CodeHandshakeBusy || !strings.Contains(e.Text, "sent nothing for") || !strings.Contains(e.Text, "connect again") {
		t.Errorf("the oldest silent peer was told %v %q, want busy with handshakes: connect again", e.Code, e.Text)
	}
	if n := transfer.Handshakes(r); n != 3 {
		t.Errorf("%d connections in their handshake, want the 3 silent peers left", n)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}
