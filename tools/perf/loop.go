// Copyright 2026 The rdmago Authors.

package perf

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rdmago/rdmago/uverbs"
)

// The measured loops. They follow perftest's run_iter_bw, run_iter_bw_server,
// run_iter_lat_write, run_iter_lat_send and run_iter_lat: the same posting
// pattern, signalling, polling batch and time stamps. They allocate nothing
// and make no system call except the doorbell write of each post.

// errStopped ends a loop early: the context ended, or the peer sent a
// control message (its end of a duration run, or an error).
var errStopped = errors.New("stopped")

// pollBatch is perftest's CTX_POLL_BATCH.
const pollBatch = 16

// spinCheck is how many spins pass between looks at the stop conditions.
const spinCheck = 1024

// idleCheck is how many empty polls of a bandwidth loop pass between calls
// to yield (the client's posts yield on their own, as they stamp the clock
// anyway). yield reads the cycle counter, which under TCG is a helper call
// costing more than the poll itself: read on every empty poll it took 41 %
// of send_bw's receiver (its pprof profile
// under TCG, docs/performance.md), halving its polling rate. perftest's
// loops read no clock while they poll.
const idleCheck = 64

// stopped reports whether the loop must end: the context is done, or a
// control message arrived.
func (s *session) stopped() bool {
	return s.abort.Load() || s.ctrl != nil && s.ctrl.waiting()
}

// settle starts a size from a finished garbage collection, as testing.B
// does: the loops allocate nothing, so no cycle then runs during the
// measurement (a cycle left over from the setup would take a P for its mark
// worker and stop the loop for its phase changes). It also waits for the
// finalizers and cleanups the collection queued, which run on goroutines of
// their own and would otherwise allocate while the loop is measured.
func settle() {
	fin, clean := make(chan struct{}), make(chan struct{})
	a, b := new([32]byte), new([32]byte)
	runtime.SetFinalizer(a, func(*[32]byte) { close(fin) })
	runtime.AddCleanup(b, func(ch chan struct{}) { close(ch) }, clean)
	a, b = nil, nil
	runtime.GC()
	t := time.NewTimer(100 * time.Millisecond)
	defer t.Stop()
	for _, ch := range []chan struct{}{fin, clean} {
		select {
		case <-ch:
		case <-t.C:
			return
		}
	}
}

// newStamps allocates n time stamps and touches every page of them, so
// that the measured loop that fills them takes no page fault. Fresh heap
// memory is mapped but not yet backed: the first write to each page
// faults, and with transparent huge pages (the lab's guests: "always") a
// fault in Go's 2 MiB-aligned heap may clear a whole 2 MiB page,
// milliseconds under TCG, in the middle of the loop. perftest's stamp
// arrays come from malloc, an mmap of their own size. Measured in the
// lab (docs/performance.md): fewer gaps over 1 ms between posts, no
// bandwidth change beyond the noise.
func newStamps(n int) []int64 {
	s := make([]int64, n)
	const perPage = 4096 / 8
	for i := 0; i < n; i += perPage {
		s[i] = 0
	}
	return s
}

// spinUp keeps the calling goroutine's thread busy for d, reading the
// clock, before a measured loop (warmUp says which). The exchange with the
// peer just before the loop idles every P, which sends the runtime's
// sysmon thread into its deep sleep; the next system call through the
// scheduler's entry wakes it and resets its period: 20 µs for 50 rounds,
// then doubling to 10 ms, reached after some 10-15 ms of a busy P. Each
// round preempts the loop on a one-CPU guest; perftest's loop, in C, starts
// without that. Measured under the lab's instruction clock: read_bw 4 KiB
// × 1,024 (58 ms) lost 1.3 % to it, write_bw and read_bw 64 KiB × 100
// 0.5-0.6 % (docs/performance.md).
func spinUp(clk Clock, d time.Duration) {
	if d <= 0 {
		return
	}
	for end := ticks() + clk.ticksIn(d); ticks() < end; {
	}
}

// firstPoster reports whether this side (server or not) posts the first
// request of test's loop, so that a spin before it (warmUp) delays no
// peer's measurement: the peer of a bandwidth client, of read_lat and of
// atomic_lat only answers from its device, and the peer of a ping-pong
// (send_lat: the client sends first; write_lat: the server writes first)
// takes its first stamp after the first message arrives, in perftest as
// here, so its wait for it is its own warm-up.
func firstPoster(t Test, server bool) bool {
	switch t {
	case WriteLat:
		return server
	case ConnTime:
		return false
	}
	return !server
}

// warmUp spins for --warmup (spinUp) before an -n loop on the side that
// posts first (firstPoster). Measured under the lab's instruction clock
// for atomic_lat 8 B × 2,000 on 6.1: without it 3 % of rdmaperf's round
// trips took 22.01 µs against 14.58 (sysmon's 20 µs rounds), its 99th
// percentile 22.01, standard deviation 1.27; with it 14.57 and 0.37, as
// perftest's 14.31 and 0.12-0.21 (docs/performance.md).
func (s *session) warmUp(ph *phaser) {
	if !ph.on && firstPoster(s.cfg.Test, s.server) {
		spinUp(s.clock, s.cfg.Warmup)
	}
}

// yieldEvery is how often the loops give the scheduler a turn: just inside
// the runtime's 10 ms forced-preemption limit. RDMAPERF_YIELD overrides it
// (a Go duration; 0 turns yielding off).
var yieldEvery = func() time.Duration {
	if v, err := time.ParseDuration(os.Getenv("RDMAPERF_YIELD")); err == nil {
		return v
	}
	return 8 * time.Millisecond
}()

// yield calls runtime.Gosched every yieldEvery. A goroutine that never
// reschedules is preempted by force after 10 ms (sysmon's retake: a signal
// and a trip through the scheduler; the doorbell write(2) is a raw system
// call, sys.RawWrite, so sysmon never takes the P itself). A voluntary turn
// costs less, but not nothing (Gosched wakes a thread for an idle P, of
// which loopProcs leaves none by default), hence the long period.
func (s *session) yield() { s.yieldStamp() }

// yieldStamp is yield for the places that stamp the clock anyway (each
// latency iteration, each bandwidth post): it returns the cycle counter read
// after the turn (if any), so they read the clock once, as perftest's do.
func (s *session) yieldStamp() int64 {
	now := ticks()
	if s.yieldTicks != 0 && now >= s.yieldAt {
		runtime.Gosched()
		now = ticks()
		s.yieldAt = now + s.yieldTicks
	}
	return now
}

// loopProcs is the GOMAXPROCS a run takes: 1, unless the GOMAXPROCS
// environment variable says otherwise. The measured loop is one goroutine
// that never blocks; a second P only gives runtime.Gosched (yield) an idle P
// to wake a thread for (goschedImpl calls wakep), and that thread, woken
// every yieldEvery to find nothing to do, takes a CPU from the peer's
// process or this one's loop (a one-VM run has two busy-polling processes on
// two vCPUs). With one P the control goroutine runs at the loop's yields
// (sysmon polls the network at least every 10 ms), which only delays the
// peer's done message, outside the measurement.
func loopProcs() int {
	if os.Getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0)
	}
	return 1
}

// Phases of a -D run: warm-up, sample, cool-down (perftest's START_STATE,
// SAMPLE_STATE, STOP_SAMPLE_STATE, END_STATE).
const (
	phaseWarm = iota
	phaseSample
	phaseCool
	phaseEnd
)

type phaser struct {
	on                      bool
	phase                   int
	warmEnd, sampleEnd, end int64
	start, stop             int64
	n                       uint64 // events counted during the sample
}

func newPhaser(s *session) phaser {
	c := s.cfg
	if c.Duration <= 0 {
		return phaser{}
	}
	now := ticks()
	m, d := s.clock.ticksIn(c.Margin), s.clock.ticksIn(c.Duration)
	// perftest's duration is the whole run: margin, sample, margin.
	return phaser{on: true, warmEnd: now + m, sampleEnd: now + d - m, end: now + d}
}

// tick advances the phase; it reports the end of the run.
func (p *phaser) tick() bool {
	now := ticks()
	switch p.phase {
	case phaseWarm:
		if now >= p.warmEnd {
			p.phase, p.start, p.n = phaseSample, now, 0
		}
	case phaseSample:
		if now >= p.sampleEnd {
			p.phase, p.stop = phaseCool, now
		}
	case phaseCool:
		if now >= p.end {
			p.phase = phaseEnd
		}
	}
	return p.phase == phaseEnd
}

// count adds n events if sampling.
func (p *phaser) count(n uint64) {
	if p.phase == phaseSample {
		p.n += n
	}
}

// sampleTicks is the sample's length (up to now if it has not ended).
func (p *phaser) sampleTicks() int64 {
	if p.stop == 0 {
		return ticks() - p.start
	}
	return p.stop - p.start
}

// measure wraps a loop with the process counters.
type measure struct {
	s     *session
	snap  snapshot
	bells uint64
	t0    int64
}

func (s *session) startMeasure() measure {
	s.startProfile()
	s.yieldTicks = s.clock.ticksIn(yieldEvery)
	s.yieldAt = ticks() + s.yieldTicks
	m := measure{s: s}
	for _, e := range s.eps {
		m.bells += e.qp.Doorbells()
	}
	m.snap = takeSnapshot()
	m.t0 = ticks()
	return m
}

// measured is what finish found.
type measured struct {
	counters  Counters
	doorbells uint64
	seconds   float64
}

// finish reads the counters again. It allocates nothing before doing so:
// the loop's results are built after it.
func (m measure) finish() measured {
	t1 := ticks()
	snap := takeSnapshot()
	var bells uint64
	for _, e := range m.s.eps {
		bells += e.qp.Doorbells()
	}
	c := snap.sub(m.snap, m.s.snapCost)
	if allocTrace && c.Mallocs > 0 {
		runtime.GC()
		takeAllocSnap().report(os.Stderr, m.s.allocBase)
	}
	if !m.snap.ok {
		c.ReadCalls, c.WriteCalls = 0, 0
	}
	return measured{counters: c, doorbells: bells - m.bells, seconds: float64(t1-m.t0) / m.s.clock.MHz / 1e6}
}

// set records the measurement in r.
func (d measured) set(r *SizeResult) {
	c := d.counters
	r.Counters = &c
	r.Doorbells = d.doorbells
	r.Seconds = d.seconds
}

// opcode is the work request of a test.
func (s *session) opcode() uverbs.WROpcode {
	switch s.cfg.Test {
	case WriteBW, WriteLat:
		return uverbs.WRRDMAWrite
	case ReadBW, ReadLat:
		return uverbs.WRRDMARead
	case AtomicLat, AtomicBW:
		if s.cfg.Atomic == CmpAndSwap {
			return uverbs.WRAtomicCmpAndSwp
		}
		return uverbs.WRAtomicFetchAndAdd
	}
	return uverbs.WRSend
}

// sendList prepares n copies of the test's work request on endpoint i.
func (s *session) sendList(i, n, size int) []uverbs.SendWR {
	e := s.eps[i]
	op := s.opcode()
	sges := make([]uverbs.SGE, n)
	wrs := make([]uverbs.SendWR, n)
	for k := range wrs {
		sges[k] = uverbs.SGE{Addr: e.mr.Addr(), Length: uint32(size), LKey: e.mr.LKey()}
		wr := &wrs[k]
		wr.ID, wr.Opcode, wr.SGL = uint64(i), op, sges[k:k+1]
		if op != uverbs.WRSend {
			wr.RemoteAddr, wr.RKey = e.remote.Addr, e.remote.RKey
		}
		switch op {
		case uverbs.WRAtomicFetchAndAdd:
			wr.CompareAdd = 1 // perftest's ATOMIC_ADD_VALUE
		case uverbs.WRAtomicCmpAndSwp:
			wr.CompareAdd, wr.Swap = 0, 0
		case uverbs.WRSend, uverbs.WRRDMAWrite:
			if size <= s.cfg.Inline {
				wr.Flags |= uverbs.SendInline
				wr.Inline = e.sendArea()[:size]
			}
		}
	}
	return wrs
}

// recvWR is endpoint i's receive: the whole receive half.
func (s *session) recvWR(i int) uverbs.RecvWR {
	e := s.eps[i]
	return uverbs.RecvWR{ID: uint64(i), SGL: []uverbs.SGE{e.mr.SGE(e.half, e.half)}}
}

// topUpRecvs posts receives until each QP has RxDepth outstanding.
func (s *session) topUpRecvs() error {
	for i, e := range s.eps {
		wr := s.recvWR(i)
		for e.posted < s.cfg.RxDepth {
			if err := e.qp.PostRecv(wr); err != nil {
				return fmt.Errorf("post recv: %w", err)
			}
			e.posted++
		}
	}
	return nil
}

// bwClient is run_iter_bw: keep up to TxDepth requests outstanding on each
// QP, signal one in CQMod, poll completions in batches of 16, stamp every
// post and every accounted completion.
func (s *session) bwClient(size int) (*SizeResult, error) {
	c := s.cfg
	q := len(s.eps)
	L := uint64(c.PostList)
	cqMod := uint64(c.CQMod)
	tx := uint64(c.TxDepth)
	iters := uint64(c.Iters)
	tot := iters * uint64(q)
	lists := make([][]uverbs.SendWR, q)
	for i := range lists {
		lists[i] = s.sendList(i, int(L), size)
		if L > 1 {
			lists[i][L-1].Flags |= uverbs.SendSignaled // cq_mod is the list length
		}
	}
	ph := newPhaser(s)
	var posted, completed []int64
	if !ph.on {
		posted, completed = newStamps(int(tot)), newStamps(int(tot))
	}
	s.warmUp(&ph) // a -D run's margin does this
	scnt, ccnt := make([]uint64, q), make([]uint64, q)
	wcs := make([]uverbs.WC, pollBatch)
	var totS, totC, posts, polls, idle uint64
	m := s.startMeasure()
	for {
		if ph.on {
			if ph.tick() {
				break
			}
		} else if totS >= tot && totC >= tot {
			break
		}
		for i := 0; i < q; i++ {
			list := lists[i]
			for (ph.on || scnt[i] < iters) && scnt[i]-ccnt[i]+L <= tx {
				if L == 1 {
					k := scnt[i]
					if cqMod == 1 || k%cqMod == cqMod-1 || (!ph.on && k == iters-1) {
						list[0].Flags |= uverbs.SendSignaled
					} else {
						list[0].Flags &^= uverbs.SendSignaled
					}
				}
				// A post is a system call, and a busy client may post for
				// longer than the preemption limit between two empty
				// polls: the posts take their turn too.
				now := s.yieldStamp()
				if !ph.on {
					posted[totS] = now
				}
				if err := s.eps[i].qp.PostSend(list...); err != nil {
					return nil, fmt.Errorf("post send on QP %d after %d: %w", i, scnt[i], err)
				}
				posts++
				scnt[i] += L
				totS += L
			}
		}
		n := 0
		if totC < totS {
			n = s.scq.Poll(wcs)
			polls++
			for k := 0; k < n; k++ {
				wc := &wcs[k]
				if wc.Status != uverbs.WCSuccess {
					return nil, fmt.Errorf("completion %d of %d: %w", totC, totS, wc.Err())
				}
				ccnt[wc.WRID] += cqMod
				totC += cqMod
				if !ph.on {
					completed[min(totC, tot)-1] = ticks()
				} else {
					ph.count(cqMod)
				}
			}
		}
		if s.stopped() {
			return nil, s.stopErr()
		}
		if n == 0 {
			if idle++; idle%idleCheck == 0 {
				s.yield()
			}
		}
	}
	if ph.on {
		// Unsignaled requests may still be in flight: one signaled request
		// per QP behind them says when they are done.
		drained := 0
		reap := func() error {
			n := s.scq.Poll(wcs)
			for k := 0; k < n; k++ {
				if err := wcs[k].Err(); err != nil {
					return err
				}
				if wcs[k].WRID&drainID != 0 {
					drained++
				}
			}
			if n == 0 && s.stopped() {
				return s.stopErr()
			}
			return nil
		}
		for i, e := range s.eps {
			last := lists[i][len(lists[i])-1]
			last.Flags |= uverbs.SendSignaled
			last.ID = uint64(i) | drainID
			for {
				err := e.qp.PostSend(last)
				if err == nil {
					break
				}
				if !errors.Is(err, uverbs.ErrQueueFull) {
					return nil, fmt.Errorf("post send on QP %d: %w", i, err)
				}
				// The ring frees as rxe completes the requests, signalled
				// or not.
				if err := reap(); err != nil {
					return nil, err
				}
			}
			scnt[i]++
		}
		for drained < q {
			if err := reap(); err != nil {
				return nil, err
			}
		}
	}
	d := m.finish()
	s.dumpStamps(size, posted, completed)
	r := &SizeResult{Size: size, Ops: totS, Posts: posts, Polls: polls, Counts: scnt}
	d.set(r)
	var bw BWStats
	var err error
	if ph.on {
		bw, err = BWDuration(size, ph.n, ph.sampleTicks(), s.clock.MHz, c.Gbits)
	} else {
		bw, err = BWIters(size, posted, completed, int(cqMod), int(L), s.clock.MHz, c.NoPeak, c.Gbits)
	}
	if err != nil {
		return nil, err
	}
	r.BW = &bw
	return r, nil
}

// drainID marks the extra request that ends a -D run.
const drainID = 1 << 40

// stopErr explains why a loop stopped early.
func (s *session) stopErr() error {
	if s.abort.Load() || s.ctrl == nil {
		return errStopped
	}
	m, err := s.ctrl.recv(bgCtx)
	if err != nil {
		return err
	}
	return fmt.Errorf("unexpected %q from the peer during the run", m.Kind)
}

// bwRecv is run_iter_bw_server for send_bw: receive until the client's
// messages are all in, re-posting each receive. The result is measured from
// the first receive to the last, without a peak (as perftest's server).
// It consumes the client's done message.
func (s *session) bwRecv(size int) (*SizeResult, *message, error) {
	c := s.cfg
	q := len(s.eps)
	want := uint64(c.Iters) * uint64(q)
	if c.Duration > 0 {
		want = 0 // learnt from the client's done
	}
	recvs := make([]uverbs.RecvWR, q)
	for i := range recvs {
		recvs[i] = s.recvWR(i)
	}
	wcs := make([]uverbs.WC, pollBatch)
	var got, polls, idle uint64
	var first, last int64
	var done *message
	m := s.startMeasure()
	for want == 0 || got < want {
		n := s.rcq.Poll(wcs)
		polls++
		if n > 0 {
			now := ticks()
			if got == 0 {
				first = now
			}
			last = now
		}
		for k := 0; k < n; k++ {
			wc := &wcs[k]
			if wc.Status != uverbs.WCSuccess {
				return nil, nil, fmt.Errorf("receive %d: %w", got, wc.Err())
			}
			got++
			i := int(wc.WRID)
			if err := s.eps[i].qp.PostRecv(recvs[i]); err != nil {
				return nil, nil, fmt.Errorf("post recv: %w", err)
			}
		}
		if n != 0 {
			continue
		}
		if idle++; idle%idleCheck != 0 {
			continue
		}
		s.yield()
		if s.stopped() {
			if s.abort.Load() {
				return nil, nil, errStopped
			}
			if done != nil {
				continue
			}
			d, err := s.ctrl.expect(bgCtx, kindDone)
			if err != nil {
				return nil, nil, err
			}
			done = d
			var sent uint64
			for _, v := range d.Counts {
				sent += v
			}
			if sent < got {
				return nil, nil, fmt.Errorf("received %d messages, the client sent %d", got, sent)
			}
			want = sent
			if want == 0 {
				break
			}
		}
	}
	d := m.finish()
	r := &SizeResult{Size: size, Ops: got, Polls: polls}
	d.set(r)
	if got > 1 {
		bw, err := BWDuration(size, got, last-first, s.clock.MHz, c.Gbits)
		if err != nil {
			return nil, nil, err
		}
		r.BW = &bw
	}
	return r, done, nil
}

// byteWatch is the last byte of a message in a buffer the peer writes, read
// through the aligned 32-bit word around it (atomically, so the compiler
// reloads it on every spin).
type byteWatch struct {
	word  *uint32
	shift uint
}

func watchByte(b []byte, off int) byteWatch {
	p := unsafe.Pointer(&b[off])
	aligned := unsafe.Pointer(uintptr(p) &^ 3)
	return byteWatch{word: (*uint32)(aligned), shift: uint(uintptr(p)&3) * 8} // little endian
}

func (w byteWatch) load() byte { return byte(atomic.LoadUint32(w.word) >> w.shift) }

// waitByte spins until the watched byte is v. When the peer's done message
// arrives it looks once more: the peer sends it after its last write
// completed, so the byte is there unless the run really is over.
func (s *session) waitByte(w byteWatch, v byte) error {
	for spins := 0; ; spins++ {
		if w.load() == v {
			return nil
		}
		if spins%spinCheck == 0 {
			s.yield()
			if s.stopped() {
				if w.load() == v {
					return nil
				}
				return errStopped
			}
		}
	}
}

// owedWait bounds how long pollOne keeps waiting for the completion of a
// request this side posted once the peer has said it is done. The request
// completes (with an ACK from the peer's device, not its program) or fails
// after the QP's retries; this only keeps a dead device from hanging the
// loop.
const owedWait = 5 * time.Second

// pollOne spins until cq yields a completion, which must be a success. A
// control message from the peer (the end of its -D run, or an error) ends
// the wait with errStopped, unless owed: then the completion is of a
// request this side posted, which the device owes whatever the peer's
// program does, so the wait goes on (up to owedWait) and the loop sees the
// peer's message at its next receive.
func (s *session) pollOne(cq *uverbs.CQ, wcs []uverbs.WC, owed bool) error {
	var deadline int64
	for spins := 0; ; spins++ {
		if cq.Poll(wcs[:1]) == 1 {
			return wcs[0].Err()
		}
		if spins%spinCheck != 0 {
			continue
		}
		s.yield()
		if !s.stopped() {
			continue
		}
		if cq.Poll(wcs[:1]) == 1 {
			return wcs[0].Err()
		}
		if !owed || s.abort.Load() {
			return errStopped
		}
		now := ticks()
		switch {
		case deadline == 0:
			deadline = now + s.clock.ticksIn(owedWait)
		case now > deadline:
			return fmt.Errorf("the peer ended the run, and the completion of this side's last request did not come in %v", owedWait)
		}
	}
}

// latResult turns stamps (or a -D sample) into the latency line.
func (s *session) latResult(size int, stamps []int64, ph *phaser, r *SizeResult) error {
	var l LatStats
	var err error
	if ph.on {
		l, err = LatDuration(size, ph.n, ph.sampleTicks(), s.clock.MHz, s.cfg.Test.rttFactor())
	} else {
		l, err = Latency(size, stamps, s.clock.MHz, s.cfg.Test.rttFactor())
	}
	if err != nil {
		return err
	}
	r.Lat = &l
	return nil
}

// writeLat is run_iter_lat_write: ping-pong of RDMA WRITEs, each side
// spinning on the last byte of its own buffer for the peer's next value.
// The server writes first.
func (s *session) writeLat(size int) (*SizeResult, error) {
	c := s.cfg
	e := s.eps[0]
	wr := s.sendList(0, 1, size)
	wr[0].Flags |= uverbs.SendSignaled
	post := e.sendArea()
	watch := watchByte(e.recvArea(), size-1)
	iters := uint64(c.Iters)
	ph := newPhaser(s)
	var stamps []int64
	if !ph.on {
		stamps = newStamps(int(iters))
	}
	wcs := make([]uverbs.WC, 1)
	var scnt, rcnt, ccnt, posts uint64
	s.warmUp(&ph)
	m := s.startMeasure()
	for ph.on || scnt < iters || ccnt < iters || rcnt < iters {
		if ph.on && ph.tick() && !s.server {
			break
		}
		if (ph.on || rcnt < iters) && !(scnt < 1 && s.server) {
			rcnt++
			if err := s.waitByte(watch, byte(rcnt)); err != nil {
				if errors.Is(err, errStopped) && s.server && !s.abort.Load() {
					break // the client is done
				}
				return nil, s.loopErr(err)
			}
		}
		if ph.on || scnt < iters {
			now := s.yieldStamp()
			if !ph.on {
				stamps[scnt] = now
			}
			scnt++
			post[size-1] = byte(scnt)
			if err := e.qp.PostSend(wr...); err != nil {
				return nil, fmt.Errorf("post send %d: %w", scnt, err)
			}
			posts++
		}
		if ph.on || ccnt < iters {
			if err := s.pollOne(s.scq, wcs, true); err != nil {
				return nil, s.loopErr(err)
			}
			ccnt++
			ph.count(1)
		}
	}
	d := m.finish()
	r := &SizeResult{Size: size, Ops: scnt, Posts: posts}
	d.set(r)
	return r, s.latResult(size, stamps, &ph, r)
}

// sendLat is run_iter_lat_send: ping-pong of SENDs; the client sends first,
// each side waits for the peer's message before answering. Sends are
// signalled every CQMod and that completion is awaited.
func (s *session) sendLat(size int) (*SizeResult, error) {
	c := s.cfg
	e := s.eps[0]
	wr := s.sendList(0, 1, size)
	recv := s.recvWR(0)
	iters := uint64(c.Iters)
	cqMod := uint64(c.CQMod)
	ph := newPhaser(s)
	var stamps []int64
	if !ph.on {
		stamps = newStamps(int(iters))
	}
	wcs := make([]uverbs.WC, 1)
	var scnt, rcnt, posts uint64
	s.warmUp(&ph)
	m := s.startMeasure()
	for ph.on || scnt < iters || rcnt < iters {
		if ph.on && ph.tick() && !s.server {
			break
		}
		if (ph.on || rcnt < iters) && !(scnt < 1 && !s.server) {
			if err := s.pollOne(s.rcq, wcs, false); err != nil {
				if errors.Is(err, errStopped) && s.server && !s.abort.Load() {
					break // the client is done
				}
				return nil, s.loopErr(err)
			}
			rcnt++
			if err := e.qp.PostRecv(recv); err != nil {
				return nil, fmt.Errorf("post recv: %w", err)
			}
		}
		if ph.on || scnt < iters {
			now := s.yieldStamp()
			if !ph.on {
				stamps[scnt] = now
			}
			scnt++
			signal := scnt%cqMod == 0 || (!ph.on && scnt == iters)
			if signal {
				wr[0].Flags |= uverbs.SendSignaled
			} else {
				wr[0].Flags &^= uverbs.SendSignaled
			}
			if err := e.qp.PostSend(wr...); err != nil {
				return nil, fmt.Errorf("post send %d: %w", scnt, err)
			}
			posts++
			if signal {
				if err := s.pollOne(s.scq, wcs, true); err != nil {
					return nil, s.loopErr(err)
				}
			}
			ph.count(1)
		}
	}
	if ph.on && !s.server && scnt%cqMod != 0 {
		// Make sure the unsignaled tail is complete before the next step.
		wr[0].Flags |= uverbs.SendSignaled
		wr[0].ID |= drainID
		if err := e.qp.PostSend(wr...); err != nil {
			return nil, err
		}
		scnt++
		if err := s.pollOne(s.scq, wcs, true); err != nil {
			return nil, s.loopErr(err)
		}
	}
	d := m.finish()
	r := &SizeResult{Size: size, Ops: scnt, Posts: posts, Counts: []uint64{scnt}}
	d.set(r)
	return r, s.latResult(size, stamps, &ph, r)
}

// readLat is run_iter_lat for RDMA READ and atomics: post one request, spin
// until it completes, repeat.
func (s *session) readLat(size int) (*SizeResult, error) {
	c := s.cfg
	e := s.eps[0]
	wr := s.sendList(0, 1, size)
	wr[0].Flags |= uverbs.SendSignaled
	iters := uint64(c.Iters)
	ph := newPhaser(s)
	var stamps []int64
	if !ph.on {
		stamps = newStamps(int(iters))
	}
	wcs := make([]uverbs.WC, 1)
	var scnt uint64
	s.warmUp(&ph)
	m := s.startMeasure()
	for ph.on || scnt < iters {
		if ph.on && ph.tick() {
			break
		}
		now := s.yieldStamp()
		if !ph.on {
			stamps[scnt] = now
		}
		scnt++
		if err := e.qp.PostSend(wr...); err != nil {
			return nil, fmt.Errorf("post send %d: %w", scnt, err)
		}
		if err := s.pollOne(s.scq, wcs, true); err != nil {
			return nil, s.loopErr(err)
		}
		ph.count(1)
	}
	d := m.finish()
	r := &SizeResult{Size: size, Ops: scnt, Posts: scnt}
	d.set(r)
	return r, s.latResult(size, stamps, &ph, r)
}

// loopErr turns errStopped into why the loop stopped.
func (s *session) loopErr(err error) error {
	if errors.Is(err, errStopped) {
		return s.stopErr()
	}
	return err
}
