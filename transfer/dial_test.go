package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// memDialer connects to ln with cfg for DialSend, one attempt each time.
func memDialer(ln *transfertest.Listener, cfg *transfertest.Options) transfer.DialFunc {
	return countDials(nil, func(ctx context.Context) (transfer.Transport, error) {
		t, err := ln.Dial(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return t, nil
	})
}

// countDials makes dial a DialFunc that counts its attempts in *n (when n
// is not nil).
func countDials(n *atomic.Int32, dial func(context.Context) (transfer.Transport, error)) transfer.DialFunc {
	return func(ctx context.Context, _ time.Duration) (transfer.Transport, int, error) {
		if n != nil {
			n.Add(1)
		}
		t, err := dial(ctx)
		return t, 0, err
	}
}

// More senders at once than the receiver lets into their handshake
// (MaxHandshakes): those it turns away connect again (DialSend), and every
// file arrives verified. This is a burst of rdmacp senders; before
// DialSend the ones turned away failed with "busy".
func TestBurstOfSenders(t *testing.T) {
	const n, hands = 10, 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dst := t.TempDir()
	r := smallReceiver(dst)
	r.MaxHandshakes = hands // MaxConns (16) has room for all n
	// Every HELLO waits until the receiver has turned away n-hands
	// connections (or 10 s): the admitted ones hold the cap while all the
	// others connect, so the burst does not depend on timing.
	gateCtx, gateCancel := context.WithTimeout(ctx, 10*time.Second)
	defer gateCancel()
	var refused atomic.Int32
	gate := make(chan struct{})
	var once sync.Once
	ln := transfertest.NewListener()
	ln.Options.Faults.Message = func(_ int, msg []byte) transfertest.Fault {
		if m, err := rdcp.Decode(msg); err == nil {
			if e, ok := m.(*rdcp.ErrorMsg); ok && e.Code == rdcp.CodeHandshakeBusy && refused.Add(1) >= n-hands {
				once.Do(func() { close(gate) })
			}
		}
		return transfertest.Deliver
	}
	scfg := &transfertest.Options{Faults: transfertest.Faults{Message: func(i int, _ []byte) transfertest.Fault {
		if i == 0 { // HELLO
			select {
			case <-gate:
			case <-gateCtx.Done():
			}
		}
		return transfertest.Deliver
	}}}
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, ln, nil) }()

	src := t.TempDir()
	items := make([][]transfer.Item, n)
	for i := range n {
		name := fmt.Sprintf("f%02d", i)
		tree(t, src, map[string][]byte{name: randBytes(uint64(300+i), 3*tSlotSize+i)})
		items[i] = plan(t, filepath.Join(src, name))
	}
	reps := make([]*transfer.Report, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			reps[i], errs[i] = (&transfer.Sender{}).DialSend(ctx, memDialer(ln, scfg), 30*time.Second, items[i])
		})
	}
	wg.Wait()
	retries := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("sender %d: %v", i, errs[i])
		}
		allVerified(t, reps[i], 1)
		retries += reps[i].BusyRetries
	}
	// Every connection turned away was followed by another: the retries
	// the senders count are the refusals the receiver sent.
	if retries < n-hands || retries != int(refused.Load()) {
		t.Errorf("senders retried %d times, the receiver turned away %d connections; want equal and at least %d", retries, refused.Load(), n-hands)
	}
	sameTree(t, src, dst)
	noPartials(t, dst)
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// A receiver whose handshake cap stays full for the whole wait: DialSend
// keeps connecting again (pausing between attempts, not hammering), then
// gives up with an error that says the receiver stayed busy and what to do.
func TestBusyForTheWholeWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dst := t.TempDir()
	r := smallReceiver(dst)
	r.MaxHandshakes = 1
	r.IdleTimeout = time.Hour
	r.HandshakeTimeout = time.Hour
	r.HandshakeGrace = -1 // the silent peer keeps its place (see TestSilentHandshakesEvicted)
	ln := transfertest.NewListener()
	defer ln.Close()
	go r.Serve(ctx, ln, nil)
	silent, err := ln.Dial(ctx, &transfertest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	waitHandshakes(t, r, 1)

	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(90, 100)})
	var attempts atomic.Int32
	dial := countDials(&attempts, func(ctx context.Context) (transfer.Transport, error) {
		tr, err := ln.Dial(ctx, &transfertest.Options{})
		if err != nil {
			return nil, err
		}
		return tr, nil
	})
	const wait = 300 * time.Millisecond
	start := time.Now()
	rep, err := (&transfer.Sender{}).DialSend(ctx, dial, wait, plan(t, filepath.Join(src, "f")))
	took := time.Since(start)
	if !errors.Is(err, transfer.ErrHandshakeBusy) {
		t.Fatalf("DialSend: %v, want ErrHandshakeBusy", err)
	}
	for _, want := range []string{"stayed busy for the whole wait of 300ms", "a longer wait", "Receiver.MaxHandshakes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// Pauses of 25 ms and more (retry.Delay) allow at most 13 attempts in
	// 300 ms; a slow machine makes fewer, never more.
	a := int(attempts.Load())
	if a < 2 || a > 13 || rep.BusyRetries != a-1 || len(rep.Files) != 0 {
		t.Errorf("%d attempts, report %+v; want 2..13 attempts, one fewer busy retries, no files", a, rep)
	}
	if took < wait {
		t.Errorf("gave up after %v, before the wait of %v", took, wait)
	}
	if ents, _ := os.ReadDir(dst); len(ents) != 0 {
		t.Errorf("the receiver's directory holds %d entries", len(ents))
	}
}

// DialSend connects again only when the receiver turned the connection
// away busy with handshakes before its HELLO; every other refusal ends
// the send after one attempt, whatever the wait.
func TestBusyNotRetried(t *testing.T) {
	hello := &rdcp.Hello{Role: rdcp.RoleReceiver, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion, Slots: 4, SlotSize: tSlotSize}
	for _, c := range []struct {
		name string
		// script is the receiver: what it sends after each message it
		// takes (nil: send without waiting).
		script []rdcp.Message
		// wantErr is the error DialSend returns; wantFile the file's.
		wantErr, wantFile error
	}{
		{"at its connection limit", []rdcp.Message{
			&rdcp.ErrorMsg{Code: rdcp.CodeBusy, Text: "the receiver already serves 16 senders"},
		}, transfer.ErrBusy, nil},
		{"busy with handshakes after its HELLO", []rdcp.Message{
			nil, hello, &rdcp.ErrorMsg{Code: rdcp.CodeHandshakeBusy, Text: "too late to say so"},
		}, transfer.ErrHandshakeBusy, nil},
		{"name written by another connection", []rdcp.Message{
			nil, hello, nil, &rdcp.Result{ID: 1, Code: rdcp.CodeBusy, Text: "another sender is writing f right now"},
			nil, &rdcp.Bye{},
		}, nil, transfer.ErrBusy},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var attempts atomic.Int32
			var wg sync.WaitGroup
			defer wg.Wait()
			dial := countDials(&attempts, func(ctx context.Context) (transfer.Transport, error) {
				st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
				wg.Go(func() {
					defer rt.Close()
					for _, m := range c.script {
						if m == nil {
							if _, err := rt.Receive(ctx); err != nil {
								t.Errorf("receiver: %v", err)
								return
							}
							continue
						}
						b, err := rdcp.Encode(m)
						if err == nil {
							err = rt.Send(ctx, b)
						}
						if err != nil {
							t.Errorf("receiver: send %v: %v", m.Type(), err)
							return
						}
					}
				})
				return st, nil
			})
			src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(91, 100)})
			rep, err := (&transfer.Sender{}).DialSend(ctx, dial, 5*time.Second, plan(t, filepath.Join(src, "f")))
			if c.wantErr == nil && err != nil || c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("DialSend: %v, want %v", err, c.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "stayed busy") {
				t.Errorf("DialSend: %v: retried until the wait ran out", err)
			}
			if c.wantFile != nil && (len(rep.Files) != 1 || !errors.Is(rep.Files[0].Err, c.wantFile)) {
				t.Errorf("files %+v, want one failed with %v", rep.Files, c.wantFile)
			}
			if a := attempts.Load(); a != 1 || rep.BusyRetries != 0 {
				t.Errorf("%d attempts, %d busy retries; want 1 and 0", a, rep.BusyRetries)
			}
		})
	}
}
