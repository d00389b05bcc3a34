// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/abi"
	"golang.org/x/sys/unix"
)

// fakeProduce plays the kernel: one successful completion with wrid.
func fakeProduce(cq *CQ, wrid uint64) {
	*(*abi.WC)(cq.ring.Q.ProducerSlot()) = abi.WC{WrID: wrid}
	cq.ring.Q.Produce()
}

// fakeChannelCQ is a CQ on an in-memory ring, tracked by a fake Context
// (whose command fd is a pipe: Arm's command lands in cmds), with a
// completion channel whose fd is a pipe too: the test plays the kernel's
// completion event by writing the CQ's user handle to event.
func fakeChannelCQ(t *testing.T) (cq *CQ, cmds, event int) {
	t.Helper()
	c, cmds := testContext(t)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	ev, err := newEventFile(p[0], "fake completion channel")
	if err != nil {
		t.Fatal(err)
	}
	ch := &CompChannel{ctx: c, fd: p[0], ev: ev}
	cq = fakeCQ(16)
	cq.ctx, cq.channel, cq.handle = c, ch, 7
	if cq.uh, err = c.track(kindCQ, cq); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ev.Close()
		unix.Close(p[1])
	})
	return cq, cmds, p[1]
}

func fakeEvent(t testing.TB, fd int, cq *CQ) {
	d := abi.CompEventDesc{CQHandle: cq.uh}
	if _, err := unix.Write(fd, abi.Bytes(&d)); err != nil {
		t.Error(err)
	}
}

// Completions already in the ring: Wait returns them with no system call
// (the fake Context's command pipe stays empty) and no allocation.
func TestWaitCompletionsThereNoSyscallNoAlloc(t *testing.T) {
	cq, cmds, _ := fakeChannelCQ(t)
	wcs := make([]WC, 4)
	ctx := context.Background()
	end, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cqs := []*CQ{cq}
	allocs := testing.AllocsPerRun(200, func() {
		fakeProduce(cq, 1)
		fakeProduce(cq, 2)
		if n, err := cq.Wait(ctx, wcs); n != 2 || err != nil || wcs[1].WRID != 2 {
			panic("Wait did not return the two completions")
		}
		fakeProduce(cq, 3)
		if n, got, err := WaitCQs(ctx, end, wcs, cqs...); n != 1 || got != cq || err != nil {
			panic("WaitCQs did not return the completion")
		}
	})
	if allocs != 0 {
		t.Errorf("Wait with completions in the ring allocates %.1f times per call, want 0", allocs)
	}
	var b [64]byte
	if n, err := unix.Read(cmds, b[:]); n > 0 || err != unix.EAGAIN {
		t.Errorf("Wait with completions in the ring wrote a command (%d bytes, %v), want no system call", n, err)
	}
}

// An empty CQ: Wait arms it (one REQ_NOTIFY_CQ command), sleeps on the
// channel, and returns the completion once the event comes.
func TestWaitArmsAndSleeps(t *testing.T) {
	cq, cmds, event := fakeChannelCQ(t)
	go func() {
		time.Sleep(20 * time.Millisecond)
		fakeProduce(cq, 9)
		fakeEvent(t, event, cq)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wcs := make([]WC, 4)
	n, err := cq.Wait(ctx, wcs)
	if n != 1 || err != nil || wcs[0].WRID != 9 {
		t.Fatalf("Wait = %d, %v (%+v), want the one completion", n, err, wcs[0])
	}
	cmd := readCmd(t, cmds)
	want := abi.ReqNotifyCQ{CQHandle: 7}
	if got := cmd[8:]; string(got) != string(abi.Bytes(&want)) {
		t.Errorf("Wait wrote command %x, want REQ_NOTIFY_CQ %x", cmd, abi.Bytes(&want))
	}
	if got := cq.compEvents; got != 1 {
		t.Errorf("%d completion events counted, want 1", got)
	}
}

// A Wait that sleeps (arms the CQ, parks on the channel, is woken by the
// event) allocates nothing of its own when ctx cannot be cancelled
// (TestWaitSleepsKeepsWatch: nor, after the first, with a cancellable one),
// and neither does arming and a quiet wait (WaitQuiet, which sleeps, or
// reads at once when the completion came first). fakeKernel plays the
// kernel.
func TestWaitSleepsNoAlloc(t *testing.T) {
	cq, cmds, event := fakeChannelCQ(t)
	fakeKernel(t, cq, cmds, event)
	ctx := context.Background()
	wcs := make([]WC, 4)
	checkSleepingWaitAllocs(t, cq, "a sleeping Wait", func() (int, error) { return cq.Wait(ctx, wcs) })
	quiet := func() bool { return !cq.Ready() }
	checkSleepingWaitAllocs(t, cq, "a quiet wait", func() (int, error) {
		if err := cq.Arm(false); err != nil {
			return 0, err
		}
		if _, err := cq.channel.WaitQuiet(ctx, quiet); err != nil {
			return 0, err
		}
		return cq.Poll(wcs), nil
	})
}

// checkSleepingWaitAllocs runs wait (a Wait that sleeps once, fakeKernel
// answering) 100 times and fails t, saying what, unless it allocated
// nothing and slept on the channel.
func checkSleepingWaitAllocs(t *testing.T, cq *CQ, what string, wait func() (int, error)) {
	t.Helper()
	before := cq.compEvents
	allocs := testing.AllocsPerRun(100, func() {
		if n, err := wait(); n != 1 || err != nil {
			panic(what + " did not return the completion")
		}
	})
	switch {
	case raceBuild:
		t.Logf("-race: %s: %.1f allocations per call (the detector's read path; not checked)", what, allocs)
	case allocs != 0:
		t.Errorf("%s: %.1f allocations per call, want 0", what, allocs)
	}
	if cq.compEvents == before {
		t.Errorf("%s: none slept on the channel (the test measured the poll only)", what)
	}
}

// fakeKernel answers each REQ_NOTIFY_CQ the fake Context's command pipe
// receives with a completion and an event, until the test ends.
func fakeKernel(t *testing.T, cq *CQ, cmds, event int) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [64]byte
		for {
			select {
			case <-quit:
				return
			default:
			}
			if n, _ := unix.Read(cmds, b[:]); n <= 0 {
				time.Sleep(20 * time.Microsecond)
				continue
			}
			fakeProduce(cq, 1)
			fakeEvent(t, event, cq)
		}
	}()
	t.Cleanup(func() { close(quit); <-done })
}

// Sleeping Waits with one cancellable ctx and end, again and again (a
// connection's deadline and lifetime), allocate nothing after the first:
// the wake-up registrations are kept from one wait to the next. And they
// still work: cancelling that ctx, or a new one given later, ends a
// parked wait; cancelling one no longer given does not.
func TestWaitSleepsKeepsWatch(t *testing.T) {
	cq, cmds, event := fakeChannelCQ(t)
	fakeKernel(t, cq, cmds, event)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	end, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	cqs := []*CQ{cq}
	wcs := make([]WC, 4)
	checkSleepingWaitAllocs(t, cq, "sleeping Waits with the same cancellable contexts", func() (int, error) {
		n, _, err := WaitCQs(ctx, end, wcs, cqs...)
		return n, err
	})

	// On a second CQ, played by hand: a wait with a that the event ends,
	// then one with a again (its registration kept) that cancelling a
	// ends; then b, kept from a wait the event ended, is left for c:
	// cancelling b does not end c's wait, cancelling c does.
	idle, _, idleEvent := fakeChannelCQ(t)
	start := func(ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() {
			wcs := make([]WC, 1)
			_, _, err := WaitCQs(ctx, nil, wcs, idle)
			done <- err
		}()
		time.Sleep(20 * time.Millisecond) // let it park
		return done
	}
	ended := func(done <-chan error, within time.Duration) (error, bool) {
		select {
		case err := <-done:
			return err, true
		case <-time.After(within):
			return nil, false
		}
	}
	byEvent := func(done <-chan error, what string) {
		fakeProduce(idle, 2)
		fakeEvent(t, idleEvent, idle)
		if err, ok := ended(done, 10*time.Second); !ok || err != nil {
			t.Fatalf("%s: Wait = %v (ended: %v), want the completion", what, err, ok)
		}
	}
	cancelled := func(done <-chan error, cancel func(), what string) {
		cancel()
		if err, ok := ended(done, 10*time.Second); !ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: Wait = %v (ended: %v), want Canceled within 10 s", what, err, ok)
		}
	}
	a, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	byEvent(start(a), "first wait with a")
	cancelled(start(a), cancelA, "second wait with a, a cancelled")
	b, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	c, cancelC := context.WithCancel(context.Background())
	defer cancelC()
	byEvent(start(b), "wait with b")
	done := start(c)
	cancelB()
	if err, ok := ended(done, 100*time.Millisecond); ok {
		t.Fatalf("cancelling b, no longer waited with, ended the wait with c: %v", err)
	}
	cancelled(done, cancelC, "wait with c, c cancelled")
}

// The wait ends with ctx, and with end (carrying end's cause), on an empty
// CQ; completions already there are returned even then.
func TestWaitEnds(t *testing.T) {
	cq, _, _ := fakeChannelCQ(t)
	wcs := make([]WC, 4)
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if n, err := cq.Wait(short, wcs); n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past its deadline = %d, %v, want DeadlineExceeded", n, err)
	}

	cause := errors.New("the peer disconnected")
	end, stop := context.WithCancelCause(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		stop(cause)
	}()
	long, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	start := time.Now()
	n, _, err := WaitCQs(long, end, wcs, cq)
	if n != 0 || !errors.Is(err, cause) {
		t.Errorf("WaitCQs when end is cancelled = %d, %v, want end's cause", n, err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("WaitCQs returned after %v, at the caller's deadline rather than end's", d)
	}
	fakeProduce(cq, 5)
	if n, _, err := WaitCQs(long, end, wcs, cq); n != 1 || err != nil {
		t.Errorf("WaitCQs after end with a completion there = %d, %v, want the completion", n, err)
	}
}

// Without a channel Wait polls; several CQs must share one channel; a
// closed CQ fails with ErrClosed.
func TestWaitPollsAndChecks(t *testing.T) {
	cq := fakeCQ(8)
	go func() {
		time.Sleep(5 * time.Millisecond)
		fakeProduce(cq, 4)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wcs := make([]WC, 2)
	if n, err := cq.Wait(ctx, wcs); n != 1 || err != nil || wcs[0].WRID != 4 {
		t.Errorf("Wait without a channel = %d, %v, want the completion", n, err)
	}
	other, _, _ := fakeChannelCQ(t)
	if _, _, err := WaitCQs(ctx, nil, wcs, cq, other); !errors.Is(err, unix.EINVAL) {
		t.Errorf("WaitCQs on CQs of different channels: %v, want EINVAL", err)
	}
	if _, err := cq.Wait(ctx, nil); !errors.Is(err, unix.EINVAL) {
		t.Errorf("Wait with no room: %v, want EINVAL", err)
	}
	closed := &CQ{}
	if _, err := closed.Wait(ctx, wcs); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait on a closed CQ: %v, want ErrClosed", err)
	}
}

// readsOf is how many read(2) calls the CQ's channel has made.
func readsOf(cq *CQ) uint64 { return cq.channel.ev.reads.Load() }

// waitQuietAsync runs WaitQuiet (or Wait, with quiet nil) in a goroutine
// and hands back its result; the caller plays the kernel meanwhile.
func waitQuietAsync(cq *CQ, d time.Duration, quiet func() bool) <-chan error {
	res := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var got *CQ
		var err error
		if quiet == nil {
			got, err = cq.channel.Wait(ctx)
		} else {
			got, err = cq.channel.WaitQuiet(ctx, quiet)
		}
		if err == nil && got != cq {
			err = errors.New("the event named another CQ")
		}
		res <- err
	}()
	return res
}

// TestWaitQuiet: a quiet channel parks without the read(2) that fails
// with EAGAIN and wakes for the next event; a ring with a completion makes
// quiet false and the wait reads at once; plain Wait reads before it parks.
func TestWaitQuiet(t *testing.T) {
	t.Run("parks without reading", func(t *testing.T) {
		cq, _, event := fakeChannelCQ(t)
		calls := 0
		asked := make(chan struct{})
		res := waitQuietAsync(cq, 5*time.Second, func() bool {
			calls++
			close(asked)
			return !cq.Ready()
		})
		<-asked // the readiness is reset: the event below wakes the park
		if n := readsOf(cq); n != 0 {
			t.Fatalf("%d reads before the event, want 0", n)
		}
		fakeProduce(cq, 1)
		fakeEvent(t, event, cq)
		if err := <-res; err != nil {
			t.Fatal(err)
		}
		if n := readsOf(cq); n != 1 || calls != 1 {
			t.Fatalf("%d reads and %d calls of quiet, want 1 and 1", n, calls)
		}
	})
	t.Run("completion in the ring", func(t *testing.T) {
		cq, _, event := fakeChannelCQ(t)
		fakeProduce(cq, 1)
		fakeEvent(t, event, cq)
		if err := <-waitQuietAsync(cq, 5*time.Second, func() bool { return !cq.Ready() }); err != nil {
			t.Fatal(err)
		}
		if n := readsOf(cq); n != 1 {
			t.Fatalf("%d reads, want 1", n)
		}
	})
	t.Run("plain Wait reads first", func(t *testing.T) {
		cq, _, event := fakeChannelCQ(t)
		res := waitQuietAsync(cq, 5*time.Second, nil)
		for end := time.Now().Add(5 * time.Second); readsOf(cq) == 0 && time.Now().Before(end); {
			time.Sleep(time.Millisecond) // until the read that finds nothing
		}
		fakeEvent(t, event, cq)
		if err := <-res; err != nil {
			t.Fatal(err)
		}
		if n := readsOf(cq); n != 2 {
			t.Fatalf("%d reads, want 2 (EAGAIN, then the event)", n)
		}
	})
	// Why quiet must not lie: an event queued before the wait is not
	// read, and no new readiness comes for it; only the context ends the
	// wait.
	t.Run("a queued event with quiet true", func(t *testing.T) {
		cq, _, event := fakeChannelCQ(t)
		fakeEvent(t, event, cq)
		time.Sleep(20 * time.Millisecond) // the netpoller may see it first
		err := <-waitQuietAsync(cq, 200*time.Millisecond, func() bool { return true })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitQuiet: %v, want the context's deadline", err)
		}
	})
}
