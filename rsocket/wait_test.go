// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitRecorder records which Conn method each wait in the completion
// channel came from (the first of Read, Write, Close, drain on the stack).
type waitRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *waitRecorder) hook() {
	buf := make([]byte, 16<<10)
	st := string(buf[:runtime.Stack(buf, false)])
	who := "another goroutine"
	for _, f := range []string{"(*Conn).Read(", "(*Conn).Write(", "(*Conn).close(", "(*Conn).drain("} {
		if strings.Contains(st, f) {
			who = strings.TrimSuffix(f, "(")
			break
		}
	}
	r.mu.Lock()
	r.calls = append(r.calls, who)
	r.mu.Unlock()
}

func (r *waitRecorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// TestFakeCallerWaits: a Read or Write that has to wait sleeps in the
// completion channel itself (rs_get_comp's ibv_get_cq_event), not behind
// a poller goroutine that would then have to wake it: one hand-off per
// message instead of two.
func TestFakeCallerWaits(t *testing.T) {
	a, b, w := fakePair(t, Options{}, Options{})
	var rec waitRecorder
	w.ends[1].onWait = rec.hook
	got := make(chan error, 1)
	go func() {
		buf := make([]byte, 5)
		_, err := io.ReadFull(b, buf)
		got <- err
	}()
	waitFor(t, "the blocked Read to wait in the channel", func() bool { return len(rec.snapshot()) > 0 })
	if _, err := a.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not return after the Write")
	}
	for _, who := range rec.snapshot() {
		if who != "(*Conn).Read" {
			t.Fatalf("waits in the channel came from %q, want only the blocked Read", rec.snapshot())
		}
	}
	if st := b.Stats(); st.Wakeups == 0 || st.Wakeups > uint64(len(rec.snapshot())) {
		t.Fatalf("Stats.Wakeups = %d after %d waits in the channel, want 1 to %[2]d", st.Wakeups, len(rec.snapshot()))
	}

	// A Write with no room (a does not read) waits itself too.
	rec = waitRecorder{}
	done := make(chan error, 1)
	go func() {
		_, err := b.Write(make([]byte, 4<<20))
		done <- err
	}()
	waitFor(t, "the blocked Write to wait in the channel", func() bool { return len(rec.snapshot()) > 0 })
	go io.CopyN(io.Discard, a, 4<<20)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked Write did not complete while the peer read")
	}
	for _, who := range rec.snapshot() {
		if who != "(*Conn).Write" {
			t.Fatalf("waits in the channel came from %q, want only the blocked Write", rec.snapshot())
		}
	}
}

// TestFakeWaitHandOff: when the goroutine waiting in the completion
// channel leaves (its deadline passed) while another is blocked, the
// other takes the wait over: the armed CQ's event is not lost.
func TestFakeWaitHandOff(t *testing.T) {
	a, b, w := fakePair(t, Options{}, Options{})
	var rec waitRecorder
	w.ends[0].onWait = rec.hook
	a.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	rerr := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 1))
		rerr <- err
	}()
	waitFor(t, "the blocked Read to wait in the channel", func() bool { return len(rec.snapshot()) > 0 })
	const size = 4 << 20 // more than b's ring: a's Write blocks until b reads
	werr := writeAsync(a, size)
	select {
	case err := <-rerr:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read: %v, want os.ErrDeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read deadline did not end the Read")
	}
	// b reads in the background: if a's Write never resumes, the copy
	// blocks until the cleanup closes b.
	go io.CopyN(io.Discard, b, size)
	awaitWrite(t, werr, "the blocked Write never completed after the Read left the channel", &rec)
	calls := rec.snapshot()
	if calls[0] != "(*Conn).Read" || !strings.Contains(strings.Join(calls, " "), "(*Conn).Write") {
		t.Fatalf("waits in the channel: %q, want the Read's first, then the Write's", calls)
	}
}

// writeAsync writes size zero bytes to c in a goroutine and hands back
// its error.
func writeAsync(c *Conn, size int) <-chan error {
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(make([]byte, size))
		werr <- err
	}()
	return werr
}

// awaitWrite fails the test unless writeAsync's Write succeeds within 5 s;
// stuck says what a timeout means, rec's waits go with it.
func awaitWrite(t *testing.T, werr <-chan error, stuck string, rec *waitRecorder) {
	t.Helper()
	select {
	case err := <-werr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s (waits in the channel: %q)", stuck, rec.snapshot())
	}
}

// TestFakeWaitWakesSleeper: a Read waits in the completion channel and a
// Write, finding it taken, sleeps until woken. The events the Read wakes
// for (the peer's credits) are the Write's business: the Read must wake
// it, or the Write sleeps for good while the Read waits on.
func TestFakeWaitWakesSleeper(t *testing.T) {
	a, b, w := fakePair(t, Options{}, Options{})
	var rec waitRecorder
	w.ends[0].onWait = rec.hook
	go a.Read(make([]byte, 1)) // ends with the cleanup's Close
	waitFor(t, "the blocked Read to wait in the channel", func() bool { return len(rec.snapshot()) > 0 })
	const size = 4 << 20 // more than b's ring: a's Write blocks until b reads
	werr := writeAsync(a, size)
	go io.CopyN(io.Discard, b, size)
	awaitWrite(t, werr, "the sleeping Write was never woken", &rec)
	if calls := rec.snapshot(); len(calls) < 2 || calls[0] != "(*Conn).Read" {
		t.Fatalf("waits in the channel: %q, want the Read's and more", calls)
	}
}

// TestFakeQuietWait: in a ping-pong each side's Read parks without
// reading the channel first (nothing was polled since it armed the CQ),
// and every message still wakes it.
func TestFakeQuietWait(t *testing.T) {
	a, b, w := fakePair(t, Options{}, Options{})
	const rounds = 200
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 64)
		for range rounds {
			if _, err := io.ReadFull(b, buf); err != nil {
				done <- err
				return
			}
			if _, err := b.Write(buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	a.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	for i := range rounds {
		if _, err := a.Write(buf); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if _, err := io.ReadFull(a, buf); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if quiets := quietsOf(w); quiets == 0 {
		t.Fatalf("no wait of %d round trips parked without reading first", rounds)
	}
}

// quietsOf is how many of end 0's waits parked without reading.
func quietsOf(w *fakeWire) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ends[0].quiets
}

// TestFakeQuietWaitSeesOtherPolls: a completion that arrives and is taken
// by another caller's poll between the waiter letting go of the lock and
// its wait (its event queued all the same) must make the wait read: a
// quiet park would miss that event for good.
func TestFakeQuietWaitSeesOtherPolls(t *testing.T) {
	a, b, w := fakePair(t, Options{}, Options{})
	a.mu.Lock()
	a.progressLocked() // the start-up's completions: the Read's wait is then quiet
	a.mu.Unlock()
	var once sync.Once
	w.ends[0].onWait = func() {
		once.Do(func() {
			if _, err := b.Write([]byte{7}); err != nil {
				t.Error(err)
			}
			a.mu.Lock() // another caller (a Write, a keepalive) polls first
			a.progressLocked()
			a.mu.Unlock()
		})
	}
	a.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 1)
	if n, err := a.Read(buf); err != nil || n != 1 || buf[0] != 7 {
		t.Fatalf("Read: %d %v (%v), want the byte 7", n, err, buf[:n])
	}
	if quiets := quietsOf(w); quiets != 0 {
		t.Fatalf("%d waits parked without reading; want none (an event was queued)", quiets)
	}
}

// TestFakeQuietWaitAfterOwnPoll: a completion that came after the CQ was
// armed and that the waiter took itself (its own Write's, here) left an
// event queued: the next wait must read it, not park quietly, or the CQ
// (disarmed by that event) never raises another and the Read misses the
// data that comes later.
func TestFakeQuietWaitAfterOwnPoll(t *testing.T) {
	a, b, _ := fakePair(t, Options{}, Options{})
	a.mu.Lock()
	a.progressLocked() // the start-up's completions
	if err := a.t.arm(); err != nil {
		t.Fatal(err)
	}
	a.armed, a.armEvents = true, a.events // as blockLocked arms
	a.mu.Unlock()
	if _, err := a.Write([]byte{1}); err != nil { // its completion raises the event
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		b.Write([]byte{7})
	}()
	a.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 1)
	if n, err := a.Read(buf); err != nil || n != 1 || buf[0] != 7 {
		t.Fatalf("Read: %d %v (%v), want the byte 7", n, err, buf[:n])
	}
}

// TestFakeIdleKeepAlive: keepalives go on while nobody calls Read or
// Write: each collects the completions of the ones before, so the control
// slots (qpCtrlSize) do not run out on an idle connection.
func TestFakeIdleKeepAlive(t *testing.T) {
	_, _, w := fakePair(t, Options{KeepAlive: time.Millisecond}, Options{})
	posted := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.ends[0].posted
	}
	waitFor(t, "more keepalives than control slots on an idle connection", func() bool { return posted() > 3*qpCtrlSize })
}
