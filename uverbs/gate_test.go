// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"errors"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/uverbs/internal/rxe"
	"golang.org/x/sys/unix"
)

// mmapQueue is an rxe queue in its own anonymous mapping, registered with
// c like a ring the kernel mapped: closing the object really unmaps it, so
// a post or poll that touches it afterwards faults.
func mmapQueue(t *testing.T, c *Context, n, elemSize int) (*rxe.Queue, []byte) {
	t.Helper()
	log2 := uint32(bits.Len(uint(elemSize - 1)))
	slots := uint32(1) << bits.Len(uint(n))
	size := (rxe.HeaderSize + int(slots)<<log2 + 4095) &^ 4095
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	h := (*abi.RxeQueueBuf)(unsafe.Pointer(&mem[0]))
	h.Log2ElemSize, h.IndexMask = log2, slots-1
	q, err := rxe.NewQueue(mem)
	if err != nil {
		t.Fatal(err)
	}
	c.res.addMap(mem)
	return q, mem
}

// pipeContext is testContext without a cleanup per call, for tests that
// make thousands: close it with the returned function.
func pipeContext(t *testing.T) (*Context, func()) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	c := &Context{
		dev: Device{Name: "fake0"}, prov: providerRXE, fd: p[1],
		res:      &resources{fd: p[1], maps: map[*byte][]byte{}, pins: map[*runtime.Pinner]struct{}{}},
		byHandle: map[uint64]any{},
	}
	for i := range c.objs {
		c.objs[i] = map[object]struct{}{}
	}
	drain := func() {
		buf := make([]byte, 4096)
		for {
			if n, _ := unix.Read(p[0], buf); n <= 0 {
				return
			}
		}
	}
	return c, func() {
		c.Close()
		drain()
		unix.Close(p[0])
	}
}

// closeRacers are goroutines calling the data path until Close makes it
// fail with ErrClosed.
type closeRacers struct {
	wg    sync.WaitGroup
	calls atomic.Int64
}

// run calls f in a goroutine until it fails with ErrClosed (ErrQueueFull is
// retried; any other error fails the test), for at most 30 s.
func (r *closeRacers) run(t *testing.T, name string, f func() error) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		end := time.Now().Add(30 * time.Second)
		for i := 0; i&255 != 0 || time.Now().Before(end); i++ {
			err := f()
			r.calls.Add(1)
			if errors.Is(err, ErrClosed) {
				return
			}
			if err != nil && !errors.Is(err, ErrQueueFull) {
				t.Errorf("%s: %v", name, err)
				return
			}
		}
		t.Errorf("%s never saw ErrClosed", name)
	}()
}

// started waits (briefly) until the racers have made n calls in all and
// reports whether they did.
func (r *closeRacers) started(n int64) bool {
	for spin := 0; r.calls.Load() < n && spin < 1e5; spin++ {
		runtime.Gosched()
	}
	return r.calls.Load() >= n
}

// TestCloseRacesDataPath runs thousands of rounds of Close against
// goroutines posting sends and receives, posting to an SRQ and polling a
// CQ, on rings mapped like the kernel's. Close must wait out the posts and
// polls inside (an unmapped ring would fault, and the race detector sees
// the ring being torn down under them), no doorbell may ring once Close has
// returned, and every later call fails with ErrClosed or finds nothing.
// Every other round closes the whole Context instead, which must do the
// same before it closes the descriptor the doorbell writes to.
func TestCloseRacesDataPath(t *testing.T) {
	labtest.OneNode(t, "fake rings, no kernel")
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	// Stop after 10 s once minRounds are done; a one-vCPU TCG guest manages
	// about 9 rounds a second, so it runs on to minRounds, within a hard cap.
	const minRounds = 100
	start := time.Now()
	more := func(done int) bool {
		d := time.Since(start)
		return d < 10*time.Second || (done < minRounds && d < 60*time.Second)
	}
	sge := []SGE{{Addr: 0x1000, Length: 8, LKey: 1}}
	raced := 0
	done := 0
	for round := 0; round < rounds && more(done); round++ {
		c, closeCtx := pipeContext(t)
		track := func(kind int, o object) uint64 {
			uh, err := c.track(kind, o)
			if err != nil {
				t.Fatal(err)
			}
			return uh
		}
		cq := &CQ{ctx: c, handle: 3}
		q, mem := mmapQueue(t, c, 64, 64)
		cq.ring, cq.mem = rxe.CQ{Q: q}, mem
		cq.uh = track(kindCQ, cq)
		srq := &SRQ{ctx: c, handle: 4, maxWR: 8, maxSGE: 1}
		q, mem = mmapQueue(t, c, 8, rxe.RecvWQEHeader+16)
		srq.rq, srq.mem = rxe.RecvQueue{Q: q, MaxSGE: 1}, mem
		srq.uh = track(kindSRQ, srq)
		qp := &QP{ctx: c, handle: 5, num: 0x11, typ: QPTypeRC, sendCQ: cq, recvCQ: cq, cap: QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}}
		q, qp.sqMem = mmapQueue(t, c, 8, rxe.SendWQEHeader+16)
		qp.sq = rxe.SendQueue{Q: q, MaxSGE: 1}
		q, qp.rqMem = mmapQueue(t, c, 8, rxe.RecvWQEHeader+16)
		qp.rq = rxe.RecvQueue{Q: q, MaxSGE: 1}
		qp.state.Store(uint32(QPSRTS))
		qp.uh = track(kindQP, qp)
		var closed atomic.Bool // set once Close has returned
		qp.ring = func() error {
			if closed.Load() {
				t.Error("doorbell rung after Close returned")
			}
			// Play the kernel inside the doorbell: take every WQE, so
			// the ring never fills, and complete one into the CQ.
			for !qp.sq.Q.Empty() {
				qp.sq.Q.Consume()
			}
			qp.doorbells.Add(1)
			return nil
		}

		var r closeRacers
		loop := func(name string, f func() error) { r.run(t, name, f) }
		loop("post send", func() error {
			return qp.PostSend(SendWR{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: sge})
		})
		loop("post recv", func() error {
			err := qp.PostRecv(RecvWR{ID: 2, SGL: sge})
			return err
		})
		loop("post srq recv", func() error { return srq.PostRecv(RecvWR{ID: 3, SGL: sge}) })
		wcs := make([]WC, 4)
		loop("poll", func() error {
			cq.Poll(wcs)
			if cq.gone() {
				return ErrClosed
			}
			return nil
		})
		if r.started(8) {
			raced++
		}
		if round%2 == 0 {
			for _, o := range []object{qp, srq, cq} {
				if err := o.Close(); err != nil {
					t.Fatalf("round %d: %T.Close: %v", round, o, err)
				}
			}
			closed.Store(true)
			closeCtx()
		} else {
			closeCtx() // Context.Close closes the objects, then the fd
			closed.Store(true)
		}
		r.wg.Wait()
		if err := qp.PostSend(SendWR{ID: 1, Opcode: WRSend, SGL: sge}); !errors.Is(err, ErrClosed) {
			t.Fatalf("round %d: PostSend after Close: %v", round, err)
		}
		if n := cq.Poll(wcs); n != 0 {
			t.Fatalf("round %d: Poll after Close found %d", round, n)
		}
		done++
		if t.Failed() {
			break
		}
	}
	if done < minRounds || raced < done/2 {
		t.Fatalf("%d rounds, %d with the data path running at Close: the race was not exercised", done, raced)
	}
	t.Logf("%d rounds, %d with the data path running at Close", done, raced)
}
