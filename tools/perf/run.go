// Copyright 2026 The rdmago Authors.

package perf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/uverbs"
)

var bgCtx = context.Background()

// SizeResult is the outcome of one message size on one side.
type SizeResult struct {
	Size int       `json:"bytes"`
	BW   *BWStats  `json:"bw,omitempty"`
	Lat  *LatStats `json:"lat,omitempty"`
	Conn *Summary  `json:"conn_usec,omitempty"` // conn_time: Dial to ESTABLISHED

	Ops       uint64    `json:"ops"`             // work requests posted (or received)
	Posts     uint64    `json:"posts,omitempty"` // PostSend calls
	Doorbells uint64    `json:"doorbells"`       // doorbell write(2)s
	Polls     uint64    `json:"polls,omitempty"` // CQ polls of the bandwidth loops (empty ones too)
	Counters  *Counters `json:"counters,omitempty"`
	Seconds   float64   `json:"seconds"` // the measured loop
	Counts    []uint64  `json:"counts,omitempty"`
}

// Report is rdmaperf's --json document.
type Report struct {
	Tool      string        `json:"tool"`
	Test      string        `json:"test"`
	Role      string        `json:"role"`
	Device    string        `json:"device"`
	Transport string        `json:"transport"` // "tcp" or "rdma_cm"
	Atomic    string        `json:"atomic,omitempty"`
	QPs       int           `json:"qps"`
	Iters     int           `json:"iters"`
	Duration  float64       `json:"duration_sec,omitempty"`
	TxDepth   int           `json:"tx_depth"`
	RxDepth   int           `json:"rx_depth"`
	CQMod     int           `json:"cq_mod"`
	PostList  int           `json:"post_list"`
	Inline    int           `json:"inline"`
	MTU       int           `json:"mtu"`
	GIDIndex  int           `json:"gid_index"`
	Clock     Clock         `json:"clock"`
	SetupSec  float64       `json:"setup_sec"` // connecting the QPs
	GoVersion string        `json:"go"`
	Procs     int           `json:"gomaxprocs"`
	Results   []*SizeResult `json:"results"`
	// Peer holds the server's own measurements of the tests it measures
	// too (send_bw, write_lat, send_lat), as the client received them.
	Peer []*SizeResult `json:"peer,omitempty"`
}

// Run runs cfg: the server when cfg.Host is empty, else the client. The
// table (or with JSON, the document) goes to stdout, notes to stderr.
// While it runs the process has GOMAXPROCS 1 unless the GOMAXPROCS
// environment variable is set (loopProcs says why); Run restores the old
// value when it returns.
func Run(ctx context.Context, cfg *Config, stdout, stderr io.Writer) (err error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(loopProcs()))
	var prof *os.File
	if cfg.CPUProfile != "" {
		// The profile starts with the first measured loop (startMeasure)
		// and stops after the last, so setup does not drown it.
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		prof = f
	}
	if cfg.MemProfile != "" {
		runtime.MemProfileRate = 1
		defer func() {
			f, ferr := os.Create(cfg.MemProfile)
			if ferr == nil {
				ferr = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if ferr != nil && err == nil {
				err = ferr
			}
		}()
	}
	if cfg.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Deadline)
		defer cancel()
	}
	s := &session{cfg: cfg, server: cfg.Host == "", out: stdout, t0: time.Now(), prof: prof}
	defer s.stopProfile()
	if os.Getenv("RDMAPERF_TRACE") != "" {
		s.trace = stderr
	}
	if cfg.JSON {
		s.out = nil
	}
	stopWatch := context.AfterFunc(ctx, func() { s.abort.Store(true) })
	defer stopWatch()
	// Calibrate while connecting: the calibration sleeps.
	clockCh := make(chan Clock, 1)
	go func() { clockCh <- calibrate(100 * time.Millisecond) }()
	s.clockCh = clockCh
	s.snapCost = measureSnapshotCost()
	defer func() {
		if cerr := s.close(); cerr != nil && err == nil {
			err = fmt.Errorf("teardown: %w", cerr)
		}
	}()
	var rep *Report
	if cfg.Perftest {
		rep, err = s.runPerftest(ctx)
	} else if s.server {
		rep, err = s.runServer(ctx, stderr)
	} else {
		rep, err = s.runClient(ctx)
	}
	if err != nil && s.ctrl != nil && !errors.Is(err, errPeer) {
		s.ctrl.sendError(err)
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, errStopped) {
			err = ctx.Err()
		}
		return err
	}
	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return nil
}

func (s *session) report() *Report {
	c := s.cfg
	r := &Report{
		Tool: "rdmaperf", Test: c.Test.String(), Role: "client", Device: s.devName, Transport: "tcp",
		QPs: c.QPs, Iters: c.Iters, Duration: c.Duration.Seconds(), TxDepth: c.TxDepth, RxDepth: c.RxDepth,
		CQMod: c.CQMod, PostList: c.PostList, Inline: c.Inline, MTU: s.mtu.Bytes(), GIDIndex: s.gid.Index,
		Clock: s.clock, SetupSec: s.setup.Seconds(), GoVersion: runtime.Version(), Procs: runtime.GOMAXPROCS(0),
	}
	if s.server {
		r.Role = "server"
	}
	if c.RDMACM {
		r.Transport, r.GIDIndex = "rdma_cm", -1
	}
	if c.Test.IsAtomic() {
		r.Atomic = c.Atomic.String()
	}
	if c.Duration > 0 {
		r.Iters = 0
	}
	return r
}

// header prints the table header of the test.
func (s *session) header() {
	if s.out == nil {
		return
	}
	switch {
	case s.cfg.Test == ConnTime:
		WriteConnHeader(s.out)
	case s.cfg.Test.IsBW():
		WriteBWHeader(s.out, s.cfg.Gbits)
	default:
		WriteLatHeader(s.out, s.cfg.Duration > 0)
	}
}

// line prints a result.
func (s *session) line(r *SizeResult) {
	if s.out == nil || r == nil {
		return
	}
	switch {
	case r.Conn != nil:
		WriteConnLine(s.out, *r.Conn)
	case r.BW != nil:
		WriteBWLine(s.out, *r.BW)
	case r.Lat != nil:
		WriteLatLine(s.out, *r.Lat, s.cfg.Duration > 0)
	}
}

func (s *session) runClient(ctx context.Context) (*Report, error) {
	if err := s.dialCtrl(ctx); err != nil {
		return nil, err
	}
	s.tracef("control channel up")
	if err := s.ctrl.send(&message{Kind: kindHello, Hello: helloFrom(s.cfg)}); err != nil {
		var we *uverbs.WCError
		if s.cfg.RDMACM && errors.As(err, &we) && (we.WC.Status == uverbs.WCRemOpErr || we.WC.Status == uverbs.WCRemInvReqErr) {
			// rdmaperf's server receives up to 64 KiB; perftest's
			// rdma_cm exchange posts one 56-byte receive, which the
			// hello overflows (rxe says IBV_WC_REM_OP_ERR, the
			// verbs spec IBV_WC_REM_INV_REQ_ERR).
			return nil, fmt.Errorf("%w: the server's receive is too small for rdmaperf's first message, as perftest's rdma_cm exchange posts: if the server is perftest (-R), run this client with --perftest", err)
		}
		return nil, err
	}
	if _, err := s.ctrl.expect(ctx, kindHelloOK); err != nil {
		var pp *perftestPeer
		if errors.As(err, &pp) {
			// perftest's server read rdmaperf's hello as the client's
			// version: its exchange cannot be resumed (see
			// servePerftest for the other way round).
			s.ctrl.Close()
			s.ctrl = nil
			return nil, fmt.Errorf("the server is perftest %s: run this client with --perftest", pp.version)
		}
		return nil, err
	}
	if s.cfg.Test == ConnTime {
		return s.connTimeClient(ctx)
	}
	if err := s.connect(ctx, nil); err != nil {
		return nil, err
	}
	s.clock = <-s.clockCh
	s.printInfo()
	s.header()
	rep := s.report()
	for _, size := range s.cfg.Sizes {
		if err := s.prepare(); err != nil {
			return nil, err
		}
		if err := s.ctrl.send(&message{Kind: kindStart, Size: size}); err != nil {
			return nil, err
		}
		if _, err := s.ctrl.expect(ctx, kindReady); err != nil {
			return nil, err
		}
		// Let the control channel's reader park again (its read attempt
		// and, with -R, the completion wait) before the loop is measured.
		time.Sleep(time.Millisecond)
		r, err := s.runSize(size)
		if err != nil {
			return nil, fmt.Errorf("%v, %d bytes: %w", s.cfg.Test, size, err)
		}
		if err := s.ctrl.send(&message{Kind: kindDone, Size: size, Counts: r.Counts, Result: r}); err != nil {
			return nil, err
		}
		ack, err := s.ctrl.expect(ctx, kindAck)
		if err != nil {
			return nil, err
		}
		s.line(r)
		rep.Results = append(rep.Results, r)
		if ack.Result != nil {
			rep.Peer = append(rep.Peer, ack.Result)
		}
	}
	s.stopProfile()
	if s.out != nil {
		WriteEnd(s.out)
	}
	if err := s.ctrl.send(&message{Kind: kindBye}); err != nil {
		return nil, err
	}
	return rep, nil
}

// startProfile starts the CPU profile (--cpuprofile) at the first loop.
func (s *session) startProfile() {
	if s.prof != nil && !s.profiling {
		if err := pprof.StartCPUProfile(s.prof); err == nil {
			s.profiling = true
		}
	}
}

// stopProfile ends it after the last.
func (s *session) stopProfile() {
	if s.profiling {
		pprof.StopCPUProfile()
		s.profiling = false
		s.prof = nil
	}
}

// prepare clears the receive halves (stale bytes would end a latency spin
// early) and fills the receive queues of the send tests.
func (s *session) prepare() error {
	settle()
	if allocTrace {
		s.allocBase = takeAllocSnap()
	}
	for _, e := range s.eps {
		clear(e.recvArea())
		clear(e.sendArea())
	}
	if s.cfg.Test == SendBW || s.cfg.Test == SendLat {
		return s.topUpRecvs()
	}
	return nil
}

// runSize runs this side's part of one size.
func (s *session) runSize(size int) (*SizeResult, error) {
	switch s.cfg.Test {
	case WriteBW, ReadBW, SendBW, AtomicBW:
		return s.bwClient(size)
	case WriteLat:
		return s.writeLat(size)
	case SendLat:
		return s.sendLat(size)
	case ReadLat, AtomicLat:
		return s.readLat(size)
	}
	return nil, fmt.Errorf("%v: no loop", s.cfg.Test)
}

func (s *session) runServer(ctx context.Context, stderr io.Writer) (*Report, error) {
	ln, err := s.listen(ctx)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	s.tracef("listening")
	if err := s.acceptCtrl(ctx, ln); err != nil {
		return nil, err
	}
	s.tracef("control channel up")
	m, err := s.ctrl.expect(ctx, kindHello)
	var pp *perftestPeer
	if errors.As(err, &pp) {
		return s.servePerftest(ctx, ln, pp, stderr)
	}
	if err != nil {
		return nil, err
	}
	if m.Hello == nil {
		return nil, errors.New("the client's hello carries no settings")
	}
	if err := s.cfg.adopt(m.Hello); err != nil {
		return nil, err
	}
	if err := s.ctrl.send(&message{Kind: kindHelloOK}); err != nil {
		return nil, err
	}
	if s.cfg.Test == ConnTime {
		return s.connTimeServer(ctx, ln)
	}
	if err := s.connect(ctx, ln); err != nil {
		return nil, err
	}
	s.clock = <-s.clockCh
	s.printInfo()
	s.header()
	rep := s.report()
	for {
		m, err := s.ctrl.recv(ctx)
		if err != nil {
			return nil, err
		}
		switch m.Kind {
		case kindBye:
			s.stopProfile()
			if s.out != nil {
				WriteEnd(s.out)
			}
			return rep, nil
		case kindStart:
		default:
			return nil, fmt.Errorf("control channel: got %q, want start or bye", m.Kind)
		}
		size := m.Size
		if size < 0 || size > s.cfg.MaxMsg() {
			return nil, fmt.Errorf("the client asks for size %d, beyond the announced %d", size, s.cfg.MaxMsg())
		}
		if err := s.prepare(); err != nil {
			return nil, err
		}
		if err := s.ctrl.send(&message{Kind: kindReady, Size: size}); err != nil {
			return nil, err
		}
		var own *SizeResult
		var done *message
		switch s.cfg.Test {
		case SendBW:
			own, done, err = s.bwRecv(size)
		case WriteLat:
			own, err = s.writeLat(size)
		case SendLat:
			own, err = s.sendLat(size)
		}
		if err != nil {
			return nil, fmt.Errorf("%v, %d bytes: %w", s.cfg.Test, size, err)
		}
		if done == nil {
			if done, err = s.ctrl.expect(ctx, kindDone); err != nil {
				return nil, err
			}
		}
		if own != nil {
			s.line(own)
			rep.Results = append(rep.Results, own)
		} else if done.Result != nil {
			// The client's figures, as perftest's server prints them.
			s.line(done.Result)
			rep.Peer = append(rep.Peer, done.Result)
		}
		if err := s.ctrl.send(&message{Kind: kindAck, Size: size, Result: own}); err != nil {
			return nil, err
		}
	}
}

// connTimeOptions are the connections conn_time sets up: cmtime's one-deep
// queues and one SGE, everything else rdma_cm's defaults.
func connTimeOptions() *cm.Options {
	return &cm.Options{SendDepth: 1, RecvDepth: 1, ReuseAddr: true}
}

// connTimeClient dials cfg.Iters connections one after the other and times
// each from the start of Dial to its return with the connection
// ESTABLISHED (resolve address and route, create the QP, connect).
func (s *session) connTimeClient(ctx context.Context) (*Report, error) {
	s.clock = <-s.clockCh
	rep := s.report()
	rep.Transport = "rdma_cm"
	s.header()
	addr := hostPort(s.cfg.Host, s.cfg.Port)
	us := make([]float64, 0, s.cfg.Iters)
	m := measure{s: s, snap: takeSnapshot(), t0: ticks()}
	for i := 0; i < s.cfg.Iters; i++ {
		t0 := time.Now()
		c, err := cm.Dial(ctx, addr, connTimeOptions())
		d := time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("connection %d: %w", i, err)
		}
		if i == 0 {
			s.devName = c.Context().Device().Name
			rep.Device = s.devName
		}
		us = append(us, float64(d.Nanoseconds())/1e3)
		if err := c.Close(); err != nil {
			return nil, fmt.Errorf("connection %d: close: %w", i, err)
		}
	}
	d := m.finish()
	sum := Summarize(us)
	r := &SizeResult{Conn: &sum, Ops: uint64(len(us))}
	d.set(r)
	if err := s.ctrl.send(&message{Kind: kindDone, Result: r}); err != nil {
		return nil, err
	}
	if _, err := s.ctrl.expect(ctx, kindAck); err != nil {
		return nil, err
	}
	s.line(r)
	if s.out != nil {
		WriteEnd(s.out)
	}
	rep.Results = append(rep.Results, r)
	return rep, s.ctrl.send(&message{Kind: kindBye})
}

// connTimeServer accepts the client's connections, closing each when the
// client does.
func (s *session) connTimeServer(ctx context.Context, ln *listener) (*Report, error) {
	s.clock = <-s.clockCh
	rep := s.report()
	rep.Transport = "rdma_cm"
	s.header()
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := 0; i < s.cfg.Iters; i++ {
		req, err := ln.cm.AcceptRequest(ctx)
		if err != nil {
			return nil, fmt.Errorf("connection %d: %w", i, err)
		}
		c, err := req.Accept(ctx, connTimeOptions())
		if err != nil {
			return nil, fmt.Errorf("connection %d: accept: %w", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-c.Done():
			case <-ctx.Done():
			}
			c.Close()
		}()
	}
	wg.Wait()
	done, err := s.ctrl.expect(ctx, kindDone)
	if err != nil {
		return nil, err
	}
	s.line(done.Result)
	if s.out != nil {
		WriteEnd(s.out)
	}
	rep.Peer = append(rep.Peer, done.Result)
	if err := s.ctrl.send(&message{Kind: kindAck}); err != nil {
		return nil, err
	}
	if _, err := s.ctrl.expect(ctx, kindBye); err != nil {
		return nil, err
	}
	return rep, nil
}
