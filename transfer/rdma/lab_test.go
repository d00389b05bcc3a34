package rdma

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
)

// The lab's file set: deterministic, so two nodes agree on it without
// talking. big is the window (4 × 64 KiB) many times over.
var labFiles = map[string]int{
	"set/big.bin":       4<<20 + 100,
	"set/small.txt":     1000,
	"set/empty":         0,
	"set/sub/exact.bin": 256 << 10,
	"set/sub/odd.bin":   64<<10 + 1,
}

func labContent(name string, n int) []byte {
	seed := uint64(len(name))
	for _, c := range name {
		seed = seed*131 + uint64(c)
	}
	r := rand.New(rand.NewPCG(seed, 42))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func writeLabFiles(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	for name, n := range labFiles {
		p := filepath.Join(src, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, labContent(name, n), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(src, "set")
}

func checkLabFiles(t *testing.T, dst string) {
	t.Helper()
	for name, n := range labFiles {
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := labContent(name, n); !bytes.Equal(b, want) {
			t.Errorf("%s: %d bytes with SHA-256 %x, want %d bytes with %x", name, len(b), sha256.Sum256(b), n, sha256.Sum256(want))
		}
		if _, err := os.Stat(filepath.Join(dst, rdcp.PartialName(name))); err == nil {
			t.Errorf("%s: partial copy left", name)
		}
	}
}

func labReceiver(dst string) *transfer.Receiver {
	return &transfer.Receiver{Dir: dst, Slots: 4, SlotSize: 64 << 10, IdleTimeout: 30 * time.Second}
}

func addr(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// serveOne accepts one connection on ln and serves it with r.
func serveOne(ctx context.Context, ln *Listener, r *transfer.Receiver) (*transfer.ConnReport, error) {
	tr, err := ln.Accept(ctx)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	return r.ServeConn(ctx, tr)
}

// TestLabTransfer sends the file set over RDMA to a receiver in the same
// process (one node: rxe loops back) and checks every byte, mode, and that
// the windows were registered and released.
func TestLabTransfer(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a := addr(env.Addr, 18611)
	ln, err := Listen(ctx, a, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dst := t.TempDir()
	type res struct {
		rep *transfer.ConnReport
		err error
	}
	rc := make(chan res, 1)
	go func() {
		rep, err := serveOne(ctx, ln, labReceiver(dst))
		rc <- res{rep, err}
	}()
	src := writeLabFiles(t)
	items, _, err := transfer.Plan(src)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Dial(ctx, a, &Options{WaitForListener: true}) // ctx bounds the wait
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := (&transfer.Sender{}).Send(ctx, tr, items)
	if cerr := tr.Close(); cerr != nil {
		t.Errorf("close: %v", cerr)
	}
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	r := <-rc
	if r.err != nil {
		t.Fatalf("receive: %v", r.err)
	}
	if !rep.OK(len(items)) {
		for _, f := range rep.Files {
			t.Errorf("%s: verified=%v %v", f.Name, f.Verified, f.Err)
		}
	}
	checkLabFiles(t, dst)
	t.Logf("%d bytes in %v (%.1f MB/s under emulation)", rep.Bytes, time.Since(start), float64(rep.Bytes)/time.Since(start).Seconds()/1e6)
}

// TestLabWindowWithdrawn checks the transport's semantics on a real QP: a
// write with immediate lands with its immediate and length before a control
// message posted after it, and once the region is closed (the MR
// deregistered) a write into it fails with ErrRemoteAccess.
func TestLabWindowWithdrawn(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := addr(env.Addr, 18612)
	ln, err := Listen(ctx, a, &Options{MaxSlots: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan transfer.Transport, 1)
	go func() {
		tr, err := ln.Accept(ctx)
		if err != nil {
			t.Error(err)
			close(accepted)
			return
		}
		accepted <- tr
	}()
	s, _, err := dialRetry(ctx, a, Options{MaxSlots: 4}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := <-accepted
	if r == nil {
		t.FailNow()
	}
	defer r.Close()

	win, err := r.Register(8192, true)
	if err != nil {
		t.Fatal(err)
	}
	src, err := s.Register(8192, false)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte("written by RDMA_WRITE_WITH_IMM")
	copy(src.Bytes()[100:], payload)
	if err := s.WriteImm(ctx, src, 100, len(payload), win.Remote(), 4000, 0xabc12345); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx, []byte("after")); err != nil {
		t.Fatal(err)
	}
	got, err := r.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Write || got.Imm != 0xabc12345 || got.Len != len(payload) {
		t.Errorf("first arrival %+v, want the write (imm 0xabc12345, %d bytes)", got, len(payload))
	}
	if !bytes.Equal(win.Bytes()[4000:4000+len(payload)], payload) {
		t.Errorf("window holds %q", win.Bytes()[4000:4000+len(payload)])
	}
	got, err = r.Receive(ctx)
	if err != nil || got.Write || string(got.Msg) != "after" {
		t.Errorf("second arrival %+v %v, want the message", got, err)
	}
	if err := s.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}

	stale := win.Remote()
	if err := win.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteImm(ctx, src, 0, 16, stale, 0, 1); err != nil && !errors.Is(err, transfer.ErrRemoteAccess) {
		t.Fatalf("post: %v", err)
	}
	if err := s.Drain(ctx); !errors.Is(err, transfer.ErrRemoteAccess) {
		t.Errorf("write into a withdrawn window: %v, want ErrRemoteAccess", err)
	}
}

// TestLabKilledSenderThenResume kills the sending end mid-file (its
// connection is torn down without BYE): the receiver reports the peer gone,
// leaves no final file but a partial, and a second sender with Resume moves
// only the rest.
func TestLabKilledSenderThenResume(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a := addr(env.Addr, 18613)
	ln, err := Listen(ctx, a, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dst := t.TempDir()
	src := t.TempDir()
	const size = 2 << 20
	data := labContent("kill", size)
	os.WriteFile(filepath.Join(src, "f"), data, 0o600)
	items, _, _ := transfer.Plan(filepath.Join(src, "f"))

	rc := make(chan error, 1)
	go func() { _, err := serveOne(ctx, ln, labReceiver(dst)); rc <- err }()
	tr, _, err := dialRetry(ctx, a, Options{}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sctx, kill := context.WithCancel(ctx)
	s := &transfer.Sender{Progress: func(p transfer.Progress) {
		if p.FileDone >= size/2 {
			kill()
		}
	}}
	if _, err := s.Send(sctx, tr, items); !errors.Is(err, context.Canceled) {
		t.Errorf("killed sender: %v", err)
	}
	tr.Close() // what the kernel does when the process dies
	if err := <-rc; !errors.Is(err, transfer.ErrPeerGone) {
		t.Errorf("receiver: %v, want ErrPeerGone", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "f")); err == nil {
		t.Fatal("final file exists after the sender was killed")
	}
	fi, err := os.Stat(filepath.Join(dst, rdcp.PartialName("f")))
	if err != nil || fi.Size() == 0 {
		t.Fatalf("no partial copy: %v", err)
	}

	go func() { _, err := serveOne(ctx, ln, labReceiver(dst)); rc <- err }()
	tr, _, err = dialRetry(ctx, a, Options{}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&transfer.Sender{Resume: true}).Send(ctx, tr, items)
	tr.Close()
	if err != nil || !rep.OK(1) {
		t.Fatalf("resume: %v %+v", err, rep)
	}
	if err := <-rc; err != nil {
		t.Errorf("receiver: %v", err)
	}
	f := rep.Files[0]
	if f.Offset != fi.Size() || f.Offset+f.Bytes != size {
		t.Errorf("resumed at %d moving %d, partial had %d", f.Offset, f.Bytes, fi.Size())
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); !bytes.Equal(b, data) {
		t.Error("resumed file differs")
	}
}

// TestLabWrongPSK: a sender with another key is refused before any window.
func TestLabWrongPSK(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := addr(env.Addr, 18614)
	ln, err := Listen(ctx, a, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dst := t.TempDir()
	r := labReceiver(dst)
	r.PSK = []byte("the receiver's key, 32 bytes ..")
	rc := make(chan error, 1)
	go func() { _, err := serveOne(ctx, ln, r); rc <- err }()
	src := writeLabFiles(t)
	items, _, _ := transfer.Plan(src)
	tr, _, err := dialRetry(ctx, a, Options{}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&transfer.Sender{PSK: []byte("another key, also 32 bytes long")}).Send(ctx, tr, items)
	tr.Close()
	if !errors.Is(err, transfer.ErrAuthFailed) {
		t.Errorf("sender: %v, want ErrAuthFailed", err)
	}
	if err := <-rc; !errors.Is(err, transfer.ErrAuthFailed) {
		t.Errorf("receiver: %v, want ErrAuthFailed", err)
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 0 {
		t.Errorf("destination touched: %v", entries)
	}
}

// TestLabTwoNodes runs the transfer across the lab's wire: node 0 receives,
// node 1 sends (it retries until node 0 listens: both start together).
func TestLabTwoNodes(t *testing.T) {
	env := labtest.Require(t)
	if os.Getenv("RDMALAB_NODES") != "2" {
		t.Skip("needs two lab nodes: go run ./cmd/rdmalab test --nodes 2 ./transfer/...")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const port = 18615
	switch env.Node {
	case "0":
		ln, err := Listen(ctx, addr(env.Addr, port), &Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		dst := t.TempDir()
		rep, err := serveOne(ctx, ln, labReceiver(dst))
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		checkLabFiles(t, dst)
		t.Logf("received %d bytes in %d files", rep.Bytes, len(rep.Files))
	case "1":
		src := writeLabFiles(t)
		items, _, _ := transfer.Plan(src)
		tr, retries, err := dialRetry(ctx, addr(env.Peer, port), Options{}, time.Minute)
		if err != nil {
			t.Fatalf("connect to %s after %d retries: %v", env.Peer, retries, err)
		}
		start := time.Now()
		rep, err := (&transfer.Sender{}).Send(ctx, tr, items)
		tr.Close()
		if err != nil || !rep.OK(len(items)) {
			t.Fatalf("send: %v", err)
		}
		el := time.Since(start)
		t.Logf("sent %d bytes in %v (%.1f MB/s under emulation, %d dial retries)", rep.Bytes, el, float64(rep.Bytes)/el.Seconds()/1e6, retries)
	default:
		t.Fatalf("unknown node %q", env.Node)
	}
}

// dying is a receiving transport that dies (closes, as when its process is
// killed) after n data writes.
type dying struct {
	transfer.Transport
	n int
}

func (d *dying) Receive(ctx context.Context) (transfer.Arrival, error) {
	a, err := d.Transport.Receive(ctx)
	if err == nil && a.Write {
		if d.n--; d.n == 0 {
			d.Transport.Close()
			return a, errors.New("killed")
		}
	}
	return a, err
}

// TestLabKilledReceiver: the receiver dies mid-file; the sender stops with
// ErrPeerGone (or ErrRemoteAccess, if a write hit the torn-down window)
// within its bounds instead of hanging, and nothing is under the final name.
func TestLabKilledReceiver(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := addr(env.Addr, 18616)
	ln, err := Listen(ctx, a, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dst := t.TempDir()
	rc := make(chan error, 1)
	go func() {
		tr, err := ln.Accept(ctx)
		if err != nil {
			rc <- err
			return
		}
		_, err = labReceiver(dst).ServeConn(ctx, &dying{Transport: tr, n: 5})
		tr.Close()
		rc <- err
	}()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "f"), labContent("dying", 2<<20), 0o600)
	items, _, _ := transfer.Plan(filepath.Join(src, "f"))
	tr, _, err := dialRetry(ctx, a, Options{}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := (&transfer.Sender{IdleTimeout: 30 * time.Second}).Send(ctx, tr, items)
	tr.Close()
	if !errors.Is(err, transfer.ErrPeerGone) && !errors.Is(err, transfer.ErrRemoteAccess) {
		t.Errorf("sender: %v, want ErrPeerGone or ErrRemoteAccess", err)
	}
	t.Logf("sender: %v (after %v)", err, time.Since(start))
	if el := time.Since(start); el > 25*time.Second {
		t.Errorf("sender took %v to notice (idle timeout 30s)", el)
	}
	if rep.OK(1) {
		t.Error("report OK")
	}
	if rerr := <-rc; rerr == nil {
		t.Error("receiver succeeded")
	}
	if _, err := os.Stat(filepath.Join(dst, "f")); err == nil {
		t.Error("final file exists")
	}
}

// TestLabConcurrentSenders: three senders at once to one receiver over RDMA.
func TestLabConcurrentSenders(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a := addr(env.Addr, 18617)
	ln, err := Listen(ctx, a, &Options{MaxSlots: 8})
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	r := labReceiver(dst)
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- r.Serve(sctx, ln, nil) }()
	const n = 3
	errs := make(chan error, n)
	for i := range n {
		go func() {
			name := fmt.Sprintf("c%d", i)
			src := t.TempDir()
			os.WriteFile(filepath.Join(src, name), labContent(name, (i+1)<<19), 0o600)
			items, _, _ := transfer.Plan(filepath.Join(src, name))
			tr, _, err := dialRetry(ctx, a, Options{MaxSlots: 8}, 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			rep, err := (&transfer.Sender{}).Send(ctx, tr, items)
			tr.Close()
			if err == nil && !rep.OK(1) {
				err = fmt.Errorf("%s: %v", name, rep.Files[0].Err)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	stop()
	ln.Close()
	<-served
	for i := range n {
		name := fmt.Sprintf("c%d", i)
		if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || !bytes.Equal(b, labContent(name, (i+1)<<19)) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// procKB returns a /proc/self/status field (VmHWM, VmRSS) in kB.
func procKB(t *testing.T, field string) int {
	t.Helper()
	kb, err := labtest.StatusKB(field)
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// procState returns the process's pinned memory (VmPin, procKB) in kB and
// the number of its open descriptors.
func procState(t *testing.T) (vmPinKB int, fds int) {
	t.Helper()
	vmPinKB = procKB(t, "VmPin")
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return vmPinKB, len(ents)
}

// TestLabNoLeaks: a whole transfer (listen, connect, windows, close) leaves
// no descriptor open and no memory pinned, and while it runs the pinned
// memory stays within the windows and buffers it needs.
func TestLabNoLeaks(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src := writeLabFiles(t)
	items, _, _ := transfer.Plan(src)
	var peakPin int
	once := func(port int) {
		a := addr(env.Addr, port)
		ln, err := Listen(ctx, a, &Options{})
		if err != nil {
			t.Fatal(err)
		}
		dst := t.TempDir()
		rc := make(chan error, 1)
		go func() { _, err := serveOne(ctx, ln, labReceiver(dst)); rc <- err }()
		tr, _, err := dialRetry(ctx, a, Options{}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s := &transfer.Sender{Progress: func(transfer.Progress) {
			if pin, _ := procState(t); pin > peakPin {
				peakPin = pin
			}
		}}
		rep, err := s.Send(ctx, tr, items)
		if err != nil || !rep.OK(len(items)) {
			t.Fatalf("send: %v", err)
		}
		tr.Close()
		if err := <-rc; err != nil {
			t.Fatal(err)
		}
		ln.Close()
	}
	once(18618) // warm up: the runtime's poller and the like stay
	pin0, fds0 := procState(t)
	once(18619)
	pin1, fds1 := procState(t)
	t.Logf("pinned %d kB before, %d kB at most during, %d kB after; %d descriptors before, %d after", pin0, peakPin, pin1, fds0, fds1)
	if pin1 != pin0 {
		t.Errorf("pinned memory %d kB after the transfer, %d kB before", pin1, pin0)
	}
	if fds1 != fds0 {
		t.Errorf("%d descriptors open after the transfer, %d before", fds1, fds0)
	}
	// Both ends in this process: two windows of 4×64 KiB, the sender's
	// staging as large, and each connection's control buffers
	// ((64+16 receive + 32 send) × 2 KiB), with page rounding slack.
	limit := (3*4*64 + 2*(64+16+32)*2 + 64) // kB
	if peakPin > pin0+limit {
		t.Errorf("pinned %d kB during the transfer, expected at most %d more than %d", peakPin, limit, pin0)
	}
}
