package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// Symbolic links in the destination cannot take a write outside it.
func TestSymlinkEscapesRefused(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	dst := t.TempDir()
	os.Symlink(outside, filepath.Join(dst, "abs"))                                       // absolute link out
	os.Symlink("../"+filepath.Base(outside), filepath.Join(dst, "rel"))                  // relative link out (if siblings)
	os.Symlink(victim, filepath.Join(dst, rdcp.PartialName("p")))                        // a planted partial
	os.Symlink(filepath.Join(outside, "new"), filepath.Join(dst, rdcp.PartialName("q"))) // a planted dangling partial
	os.Symlink(victim, filepath.Join(dst, "victimlink"))                                 // final name is a link out

	src := tree(t, t.TempDir(), map[string][]byte{
		"abs/x": []byte("via abs"), "rel/x": []byte("via rel"), "p": []byte("p data"), "q": []byte("q data"),
		"victimlink": []byte("replacement"),
	})
	// Send abs/x and rel/x as directories named like the links.
	items := plan(t, filepath.Join(src, "abs"), filepath.Join(src, "rel"), filepath.Join(src, "p"), filepath.Join(src, "q"), filepath.Join(src, "victimlink"))
	o := pair(t, &transfer.Receiver{Dir: dst, Force: true}, &transfer.Sender{Resume: true}, items, &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	byName := map[string]transfer.FileResult{}
	for _, f := range o.srep.Files {
		byName[f.Name] = f
	}
	for _, name := range []string{"abs", "abs/x", "rel", "rel/x", "p", "q"} {
		f := byName[name]
		if f.Verified || !errors.Is(f.Err, transfer.ErrBadName) {
			t.Errorf("%s: verified=%v err=%v, want ErrBadName", name, f.Verified, f.Err)
		}
	}
	// With --force a final name that is a link is replaced as a name: the
	// link goes, its target stays.
	if f := byName["victimlink"]; !f.Verified {
		t.Errorf("victimlink: %v", f.Err)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "victimlink")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("victimlink is not a regular file now: %v", err)
	}
	if b, _ := os.ReadFile(victim); !bytes.Equal(b, []byte("precious")) {
		t.Errorf("file outside the destination changed: %q", b)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("files appeared outside the destination: %v", entries)
	}
}

func TestPSK(t *testing.T) {
	key := []byte("0123456789abcdef-shared")
	other := []byte("0123456789abcdef-OTHER!")
	for _, tc := range []struct {
		name       string
		send, recv []byte
		sendErr    error
		recvErr    error
	}{
		{"same key", key, key, nil, nil},
		{"different keys", other, key, transfer.ErrAuthFailed, transfer.ErrAuthFailed},
		{"sender without key", nil, key, transfer.ErrAuthRequired, transfer.ErrAuthRequired},
		{"receiver without key", key, nil, transfer.ErrAuthRequired, transfer.ErrAuthRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(30, 2*tSlotSize)})
			dst := t.TempDir()
			r := smallReceiver(dst)
			r.PSK = tc.recv
			// Record every control message the receiver sends.
			var sent []rdcp.MsgType
			rcfg := &transfertest.Options{Faults: transfertest.Faults{Message: func(_ int, b []byte) transfertest.Fault {
				if m, err := rdcp.Decode(b); err == nil {
					sent = append(sent, m.Type())
				}
				return transfertest.Deliver
			}}}
			o := pair(t, r, &transfer.Sender{PSK: tc.send}, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, rcfg)
			if !errors.Is(o.serr, tc.sendErr) || (tc.sendErr == nil) != (o.serr == nil) {
				t.Errorf("sender: %v, want %v", o.serr, tc.sendErr)
			}
			if !errors.Is(o.rerr, tc.recvErr) || (tc.recvErr == nil) != (o.rerr == nil) {
				t.Errorf("receiver: %v, want %v", o.rerr, tc.recvErr)
			}
			if tc.sendErr == nil {
				allVerified(t, o.srep, 1)
				return
			}
			// Refused before any memory was exposed or any file touched.
			for _, m := range sent {
				if m == rdcp.MsgWindow || m == rdcp.MsgResumeOffset {
					t.Errorf("receiver sent %v without authentication (sent %v)", m, sent)
				}
			}
			if _, _, count := o.rT.Registered(); count != 0 {
				t.Errorf("receiver registered %d regions without authentication", count)
			}
			if entries, _ := os.ReadDir(dst); len(entries) != 0 {
				t.Errorf("destination touched: %v", entries)
			}
		})
	}
}

// A receiver that answers AUTH with a wrong proof (an impostor that does not
// know the key) is refused by the sender before it sends any FILE.
func TestSenderRefusesImpostor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
	p := &rawPeer{t: t, tr: rt, ctx: ctx}
	errc := make(chan error, 1)
	src := tree(t, t.TempDir(), map[string][]byte{"f": []byte("secret")})
	go func() {
		_, err := (&transfer.Sender{PSK: []byte("0123456789abcdef")}).Send(ctx, st, plan(t, filepath.Join(src, "f")))
		errc <- err
	}()
	p.expect(rdcp.MsgHello)
	p.send(&rdcp.Hello{Role: rdcp.RoleReceiver, Flags: rdcp.HelloPSK, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion, Slots: 1, SlotSize: 4096})
	p.expect(rdcp.MsgAuth)
	p.send(&rdcp.Auth{}) // a guess
	if e := p.errorMsg(); e.Code != rdcp.CodeAuthFailed {
		t.Errorf("sender's ERROR %v, want auth failed", e.Code)
	}
	if err := <-errc; !errors.Is(err, transfer.ErrAuthFailed) {
		t.Errorf("sender: %v, want ErrAuthFailed", err)
	}
}

func TestConcurrentSenders(t *testing.T) {
	dst := t.TempDir()
	r := smallReceiver(dst)
	ln := transfertest.NewListener()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, ln, nil) }()

	const n = 4
	var wg sync.WaitGroup
	srcs := make([]string, n)
	for i := range n {
		srcs[i] = tree(t, t.TempDir(), map[string][]byte{fmt.Sprintf("s%d/f", i): randBytes(uint64(40+i), (i+1)*5*tSlotSize+i)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := ln.Dial(ctx, &transfertest.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer tr.Close()
			items, _, _ := transfer.Plan(filepath.Join(srcs[i], fmt.Sprintf("s%d", i)))
			rep, err := (&transfer.Sender{}).Send(ctx, tr, items)
			if err != nil || !rep.OK(len(items)) {
				t.Errorf("sender %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	ln.Close()
	if err := <-served; err == nil || !errors.Is(err, transfertest.ErrListenerClosed) {
		t.Logf("serve: %v", err)
	}
	for i := range n {
		sameTree(t, srcs[i], dst)
	}
}

// Two senders of the same name at once: the second is told the name is busy.
func TestSameNameBusy(t *testing.T) {
	dst := t.TempDir()
	r := smallReceiver(dst)
	ln := transfertest.NewListener()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go r.Serve(ctx, ln, nil)
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(50, 8*tSlotSize)})
	items := plan(t, filepath.Join(src, "f"))

	inFlight, release := make(chan struct{}), make(chan struct{})
	first := make(chan *transfer.Report, 1)
	go func() {
		tr, _ := ln.Dial(ctx, &transfertest.Options{Faults: transfertest.Faults{Write: func(i int, _ []byte) transfertest.Fault {
			if i == 1 {
				close(inFlight)
				<-release
			}
			return transfertest.Deliver
		}}})
		defer tr.Close()
		rep, err := (&transfer.Sender{}).Send(ctx, tr, items)
		if err != nil {
			t.Error(err)
		}
		first <- rep
	}()
	<-inFlight
	tr, _ := ln.Dial(ctx, &transfertest.Options{})
	rep, err := (&transfer.Sender{}).Send(ctx, tr, items)
	tr.Close()
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Files[0]; !errors.Is(f.Err, transfer.ErrBusy) {
		t.Errorf("second sender: %v, want ErrBusy", f.Err)
	}
	allVerified(t, <-first, 1)
	sameTree(t, src, dst)
	ln.Close()
}

func TestMaxConns(t *testing.T) {
	r := smallReceiver(t.TempDir())
	r.MaxConns = 1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln := transfertest.NewListener()
	go r.Serve(ctx, ln, nil)
	defer ln.Close()
	a, _ := ln.Dial(ctx, &transfertest.Options{})
	defer a.Close()
	pa := &rawPeer{t: t, tr: a, ctx: ctx}
	pa.hello() // the first connection is being served
	b, _ := ln.Dial(ctx, &transfertest.Options{})
	defer b.Close()
	pb := &rawPeer{t: t, tr: b, ctx: ctx}
	if e := pb.errorMsg(); e.Code != rdcp.CodeBusy {
		t.Errorf("second connection: %v %q, want busy", e.Code, e.Text)
	}
}

func TestLimits(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"a": randBytes(60, 100), "b": randBytes(61, 5000), "c": nil, "d": nil})
	dst := t.TempDir()
	r := smallReceiver(dst)
	r.MaxFileSize = 1000
	o := pair(t, r, &transfer.Sender{}, plan(t, filepath.Join(src, "a"), filepath.Join(src, "b")), &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil {
		t.Fatal(o.serr)
	}
	if !o.srep.Files[0].Verified || !errors.Is(o.srep.Files[1].Err, transfer.ErrTooLarge) {
		t.Errorf("size limit: %v / %v", o.srep.Files[0].Err, o.srep.Files[1].Err)
	}
	if exists(filepath.Join(dst, "b")) || exists(filepath.Join(dst, rdcp.PartialName("b"))) {
		t.Error("oversized file left something")
	}

	r = smallReceiver(t.TempDir())
	r.MaxFiles = 2
	o = pair(t, r, &transfer.Sender{}, plan(t, filepath.Join(src, "a"), filepath.Join(src, "c"), filepath.Join(src, "d")), &transfertest.Options{}, &transfertest.Options{})
	if !errors.Is(o.serr, transfer.ErrTooMany) || !errors.Is(o.rerr, transfer.ErrTooMany) {
		t.Errorf("file count limit: send %v, receive %v", o.serr, o.rerr)
	}
	if len(o.srep.Files) != 3 || !o.srep.Files[1].Verified {
		t.Errorf("results %+v", o.srep.Files)
	}
}

func TestWindowNegotiation(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(70, 50*4096)})
	// The sender asks for less than the receiver allows; the transport's
	// depth limits the receiver too.
	r := &transfer.Receiver{Dir: t.TempDir(), Slots: 32, SlotSize: 64 << 10}
	o := pair(t, r, &transfer.Sender{Slots: 3, SlotSize: 8192}, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, &transfertest.Options{MaxSlots: 2})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	// Each slot holds a chunk of 8192 bytes and its CRC32C.
	slot := rdcp.Stride(rdcp.VerifyCRC32C, 8192)
	if _, peak, _ := o.rT.Registered(); peak != 2*slot {
		t.Errorf("receiver window peak %d, want 2×%d", peak, slot)
	}
	if _, peak, _ := o.sT.Registered(); peak != 2*slot {
		t.Errorf("sender staging peak %d, want 2×%d", peak, slot)
	}
}

func TestPlan(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"d/a": {1}, "d/sub/b": {2}, "f": {3}})
	os.Symlink("a", filepath.Join(src, "d", "link"))
	items, skipped, err := transfer.Plan(filepath.Join(src, "d"), filepath.Join(src, "f"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, fmt.Sprintf("%s:%v", it.Name, it.Kind))
	}
	want := []string{"d:directory", "d/a:file", "d/sub:directory", "d/sub/b:file", "f:file"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("plan %v, want %v", got, want)
	}
	if len(skipped) != 1 || !bytes.Contains([]byte(skipped[0]), []byte("symbolic link")) {
		t.Errorf("skipped %v", skipped)
	}
	other := tree(t, t.TempDir(), map[string][]byte{"f": {4}})
	if _, _, err := transfer.Plan(filepath.Join(src, "f"), filepath.Join(other, "f")); err == nil {
		t.Error("two sources with one name accepted")
	}
	if _, _, err := transfer.Plan("/"); err == nil {
		t.Error("/ accepted")
	}
	if _, _, err := transfer.Plan(filepath.Join(src, "missing")); err == nil {
		t.Error("missing path accepted")
	}
}
