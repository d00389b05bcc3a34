// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// ringReader hands out its data in Reads of random sizes and records
// whether every buffer it was given lay inside ring.
type ringReader struct {
	r       io.Reader
	rng     *rand.Rand
	ring    []byte
	outside int // Reads into memory outside ring
	reads   int
}

// inside reports whether b lies within ring's memory.
func inside(b, ring []byte) bool {
	lo := uintptr(unsafe.Pointer(&ring[0]))
	p := uintptr(unsafe.Pointer(&b[0]))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(ring))
}

func (r *ringReader) Read(b []byte) (int, error) {
	r.reads++
	if !inside(b, r.ring) {
		r.outside++
	}
	if n := 1 + r.rng.IntN(len(b)); n < len(b) {
		b = b[:n] // short Reads, as from a pipe
	}
	return r.r.Read(b)
}

// TestFakeReadFrom: io.Copy into a Conn goes through ReadFrom, whose
// reader fills the send ring itself (no copy through a buffer of
// io.Copy's), and every byte arrives in order, over ring wraps, short
// Reads and inline-sized messages; r's io.EOF ends it without an error.
func TestFakeReadFrom(t *testing.T) {
	a, b, _ := fakePair(t, Options{SendBuffer: 8192}, Options{RecvBuffer: 8192})
	data := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	want := sha256.Sum256(data)
	got := make(chan [32]byte, 1)
	go func() {
		h := sha256.New()
		io.CopyN(h, b, int64(len(data)))
		var s [32]byte
		copy(s[:], h.Sum(nil))
		got <- s
	}()
	r := &ringReader{r: bytes.NewReader(data), rng: rng, ring: a.mem.sbuf[:a.cfg.sbufSize]}
	n, err := io.Copy(a, r)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("io.Copy = %d, %v; want %d, nil", n, err, len(data))
	}
	if r.outside != 0 {
		t.Fatalf("%d of %d Reads went to memory outside the send ring", r.outside, r.reads)
	}
	select {
	case s := <-got:
		if s != want {
			t.Fatal("the bytes read differ from the bytes sent")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader did not get every byte")
	}
}

var errSource = errors.New("source failed")

type failReader struct{ n int }

func (r *failReader) Read(b []byte) (int, error) {
	if r.n == 0 {
		return 0, errSource
	}
	k := min(len(b), r.n)
	r.n -= k
	return k, nil
}

// TestFakeReadFromErrors: r's error ends ReadFrom with it (after what r
// gave before is sent); a closed or shut connection fails it as Write.
func TestFakeReadFromErrors(t *testing.T) {
	a, b, _ := fakePair(t, Options{}, Options{})
	n, err := a.ReadFrom(&failReader{n: 5000})
	if !errors.Is(err, errSource) || n != 5000 {
		t.Fatalf("ReadFrom = %d, %v; want 5000, the source's error", n, err)
	}
	if _, err := io.ReadFull(b, make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	a.CloseWrite()
	if _, err := a.ReadFrom(bytes.NewReader([]byte("x"))); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("ReadFrom after CloseWrite: %v, want EPIPE", err)
	}
	a.Close()
	if _, err := a.ReadFrom(bytes.NewReader([]byte("x"))); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadFrom after Close: %v, want net.ErrClosed", err)
	}
}

// blockAtEOF gives r's bytes, then blocks until release before io.EOF.
type blockAtEOF struct {
	r       io.Reader
	release chan struct{}
}

func (r *blockAtEOF) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if err == io.EOF {
		<-r.release
	}
	return n, err
}

// TestFakeReadFromPeerDoneFirst: r is read before ReadFrom waits for the
// peer, as TCP's ReadFrom does: a peer that took every byte and closed
// before r gave its io.EOF does not fail the ReadFrom. (The race this
// guards against, ReadFrom waiting for the peer's next buffer after the
// last byte and meeting its DISCONNECT, showed in the two-node lab's
// TestLabStream; here the wire's timing rarely produces it.)
func TestFakeReadFromPeerDoneFirst(t *testing.T) {
	a, b, _ := fakePair(t, Options{}, Options{RecvBuffer: 8192})
	const size = 4096 // b's first published half-ring
	r := &blockAtEOF{r: bytes.NewReader(make([]byte, size)), release: make(chan struct{})}
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := a.ReadFrom(r)
		done <- result{n, err}
	}()
	if _, err := io.ReadFull(b, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	b.Close()
	a.Stats() // a handles b's DISCONNECT
	close(r.release)
	select {
	case res := <-done:
		if res.err != nil || res.n != size {
			t.Fatalf("ReadFrom = %d, %v; want %d, nil: the peer took everything before r's EOF", res.n, res.err, size)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFrom did not return")
	}
}

// ringWriter takes what it is given, recording whether every slice lay
// inside ring (no copy was made before it).
type ringWriter struct {
	w       io.Writer
	ring    []byte
	outside int
	writes  int
}

func (w *ringWriter) Write(b []byte) (int, error) {
	w.writes++
	if !inside(b, w.ring) {
		w.outside++
	}
	return w.w.Write(b)
}

// TestFakeWriteTo: io.Copy from a Conn goes through WriteTo, which hands
// the writer the receive ring itself (no copy into io.Copy's buffer), and
// every byte arrives in order over ring wraps and messages of every size
// Write makes; the peer's CloseWrite ends it without an error.
func TestFakeWriteTo(t *testing.T) {
	a, b, _ := fakePair(t, Options{}, Options{RecvBuffer: 8192})
	data := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	go func() {
		for rest := data; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(20000)) // inline-sized to several transfers
			if _, err := a.Write(rest[:k]); err != nil {
				return
			}
			rest = rest[k:]
		}
		a.CloseWrite()
	}()
	h := sha256.New()
	w := &ringWriter{w: h, ring: b.mem.rbuf}
	n, err := io.Copy(w, b)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("io.Copy = %d, %v; want %d, nil", n, err, len(data))
	}
	if w.outside != 0 {
		t.Fatalf("%d of %d Writes were given memory outside the receive ring", w.outside, w.writes)
	}
	if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("the bytes written differ from the bytes sent")
	}
}

type failWriter struct{ n, short int }

func (w *failWriter) Write(b []byte) (int, error) {
	if w.short > 0 {
		return min(len(b), w.short), nil
	}
	if k := min(len(b), w.n); k < len(b) {
		w.n = 0
		return k, errSource // took k, then failed
	}
	w.n -= len(b)
	return len(b), nil
}

// TestFakeWriteToErrors: w's error ends WriteTo with it (counting what w
// took, the rest stays to be read); a short Write is io.ErrShortWrite; the
// peer vanishing is ECONNRESET in a *net.OpError "writeto", as package
// net's TCPConn.WriteTo reports; after Close it is net.ErrClosed.
func TestFakeWriteToErrors(t *testing.T) {
	a, b, w := fakePair(t, Options{}, Options{})
	if _, err := a.Write(make([]byte, 10000)); err != nil {
		t.Fatal(err)
	}
	n, err := b.WriteTo(&failWriter{n: 3000})
	if !errors.Is(err, errSource) || n != 3000 {
		t.Fatalf("WriteTo = %d, %v; want 3000, the writer's error", n, err)
	}
	n, err = b.WriteTo(&failWriter{short: 10})
	if err != io.ErrShortWrite || n != 10 {
		t.Fatalf("WriteTo = %d, %v; want 10, io.ErrShortWrite", n, err)
	}
	if k, err := io.ReadFull(b, make([]byte, 10000-3010)); err != nil {
		t.Fatalf("the rest: %d, %v", k, err)
	}
	w.ends[0].disconnect() // a's process died
	_, err = b.WriteTo(io.Discard)
	var oe *net.OpError
	if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &oe) || oe.Op != "writeto" {
		t.Fatalf("WriteTo after the peer vanished: %v, want ECONNRESET in a *net.OpError writeto", err)
	}
	b.Close()
	if _, err := b.WriteTo(io.Discard); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("WriteTo after Close: %v, want net.ErrClosed", err)
	}
}

// blockingWriter blocks in its first Write until release, telling entered
// when it got there.
type blockingWriter struct {
	entered, release chan struct{}
	got              []byte // what the first Write was given, on entry
	same             bool   // it was still that when released
}

func (w *blockingWriter) Write(b []byte) (int, error) {
	if w.got == nil {
		w.got = append([]byte{}, b...)
		close(w.entered)
		<-w.release
		w.same = bytes.Equal(b, w.got)
	}
	return len(b), nil
}

// blockingReader is blockingWriter for ReadFrom: it blocks in its first
// Read, then fills the buffer it was given.
type blockingReader struct{ entered, release chan struct{} }

func (r *blockingReader) Read(b []byte) (int, error) {
	close(r.entered)
	<-r.release
	for i := range b {
		b[i] = 'x'
	}
	return len(b), nil
}

// TestFakeCloseWhileRingLent: a Close while ReadFrom's reader or WriteTo's
// writer holds a slice of the rings (blocked, as on a network socket)
// returns, and fails the call, but leaves the memory mapped until the
// call has it back: on a real device Close unmaps the rings, and a reader
// filling its buffer afterwards would fault, or write into whatever was
// mapped there next. A Close with nothing lent unmaps at once, once.
func TestFakeCloseWhileRingLent(t *testing.T) {
	_, b, w := fakePair(t, Options{}, Options{})
	b.Close()
	b.Close()
	if n := w.ends[1].freed(); n != 1 {
		t.Fatalf("Close unmapped the memory %d times, want once", n)
	}
	for _, lend := range []string{"ReadFrom", "WriteTo"} {
		t.Run(lend, func(t *testing.T) {
			a, b, w := fakePair(t, Options{}, Options{})
			entered, release := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			conn, end := a, w.ends[0]
			switch lend {
			case "ReadFrom":
				go func() {
					_, err := a.ReadFrom(&blockingReader{entered: entered, release: release})
					done <- err
				}()
			case "WriteTo":
				conn, end = b, w.ends[1]
				if _, err := a.Write([]byte("data")); err != nil {
					t.Fatal(err)
				}
				go func() {
					_, err := b.WriteTo(&blockingWriter{entered: entered, release: release})
					done <- err
				}()
			}
			<-entered
			if err := conn.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if n := end.freed(); n != 0 {
				t.Fatalf("Close unmapped the rings while %s's caller held them", lend)
			}
			close(release)
			select {
			case err := <-done:
				if !errors.Is(err, net.ErrClosed) {
					t.Fatalf("%s after Close: %v, want net.ErrClosed", lend, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s did not return", lend)
			}
			if n := end.freed(); n != 1 {
				t.Fatalf("the rings were unmapped %d times after %s returned, want once", n, lend)
			}
		})
	}
}

// TestFakeCloseReadWhileWriteToHolds: CloseRead while WriteTo's writer has
// a message in hand drops the queued data but not the space the writer
// reads: the peer, still sending, must not overwrite it before the writer
// is done (the ring would otherwise go back to the peer with it).
func TestFakeCloseReadWhileWriteToHolds(t *testing.T) {
	a, b, _ := fakePair(t, Options{}, Options{RecvBuffer: 8192})
	first := bytes.Repeat([]byte("f"), 1000)
	if _, err := a.Write(first); err != nil {
		t.Fatal(err)
	}
	bw := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := b.WriteTo(bw)
		done <- err
	}()
	<-bw.entered
	if err := b.CloseRead(); err != nil {
		t.Fatal(err)
	}
	// The peer goes on writing (it does not know): 64 KiB of another byte,
	// eight times the ring, which b drops as it arrives.
	go a.Write(bytes.Repeat([]byte("o"), 64<<10))
	time.Sleep(300 * time.Millisecond)
	close(bw.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WriteTo after CloseRead: %v, want nil (end of the stream)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WriteTo did not return")
	}
	if !bw.same {
		t.Fatal("the peer overwrote the data WriteTo's writer had in hand")
	}
}
