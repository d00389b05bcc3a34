// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/cm"
)

// ListenConfig listens with Options, which every accepted connection
// gets, as net.ListenConfig listens for TCP: Listen returns a
// net.Listener, ListenRSocket the *Listener.
type ListenConfig struct {
	Options
	// Backlog bounds the connection requests the kernel queues before the
	// Listener reads them; 0 means the kernel's maximum.
	Backlog int
	// AcceptTimeout bounds the setup of one connection, from its request
	// to ESTABLISHED; 0 means DefaultAcceptTimeout. A requester that does
	// not complete the connection in time (a half-open connect: our
	// CONNECT_RESPONSE answered by no RTU) is dropped.
	AcceptTimeout time.Duration
	// MaxPendingAccepts is how many connections the Listener sets up at
	// once; 0 means DefaultMaxPendingAccepts. A request beyond it evicts
	// the oldest setup still waiting for its requester (as a SYN queue
	// drops its oldest entry). It also bounds the connections set up and
	// not yet taken by Accept, and twice it the setups alive (evicted ones
	// tear down); requests beyond those are rejected at once.
	MaxPendingAccepts int
}

// ListenConfig defaults.
const (
	DefaultAcceptTimeout     = 10 * time.Second
	DefaultMaxPendingAccepts = 64
)

// Listen is rlisten on address ("host:port"; an empty host listens on
// every RDMA device, port 0 picks one) with the zero ListenConfig,
// returning the *Listener, as net.ListenTCP returns a *net.TCPListener;
// ctx bounds the setup. network must be "tcp", "tcp4" or "tcp6". It needs
// Linux with rdma_ucm and an RDMA device. The caller must Close the
// Listener.
func Listen(ctx context.Context, network, address string) (*Listener, error) {
	var lc ListenConfig
	return lc.ListenRSocket(ctx, network, address)
}

// Listen is net.ListenConfig.Listen: ListenRSocket returning a
// net.Listener, for http.Server.Serve and the like. The caller must Close
// it.
func (lc *ListenConfig) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	l, err := lc.ListenRSocket(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// ListenRSocket is rbind + rlisten (see the package-level Listen). The
// caller must Close the Listener.
func (lc *ListenConfig) ListenRSocket(ctx context.Context, network, address string) (*Listener, error) {
	opErr := func(err error) error {
		return &net.OpError{Op: "listen", Net: "rsocket", Err: err, Addr: addrString(address)}
	}
	if err := checkNetwork(network); err != nil {
		return nil, opErr(err)
	}
	if _, err := lc.config(); err != nil {
		return nil, opErr(err)
	}
	cl, err := cm.Listen(ctx, address, &cm.Options{Backlog: lc.Backlog, Logf: lc.Logf})
	if err != nil {
		return nil, opErr(err)
	}
	return lc.listen(cmSource{cl}), nil
}

// listen starts the Listener's request loop on src.
func (lc *ListenConfig) listen(src requestSource) *Listener {
	cfg, _ := lc.config() // checked by the caller
	l := &Listener{
		src: src, o: lc.Options, cfg: cfg, addr: tcpAddr(src.addr()),
		timeout:  orDefault(lc.AcceptTimeout, DefaultAcceptTimeout),
		limit:    orDefault(lc.MaxPendingAccepts, DefaultMaxPendingAccepts),
		ready:    make(chan *Conn),
		setupErr: make(chan error, 1),
		loopDone: make(chan struct{}),
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	go l.loop()
	return l
}

// requestSource is where a Listener's connection requests come from:
// cm.Listener (cmSource), or the tests' fakes.
type requestSource interface {
	next(ctx context.Context) (request, error)
	addr() netip.AddrPort
	close() error
}

// request is one connection request.
type request interface {
	privateData() []byte
	// remote is the requester's address, for the log.
	remote() string
	reject()
	// accept sets up the connection within ctx and accepts it.
	accept(ctx context.Context, cfg config, o *Options, peer connData) (*Conn, error)
}

type cmSource struct{ l *cm.Listener }

func (s cmSource) next(ctx context.Context) (request, error) {
	r, err := s.l.AcceptRequest(ctx)
	if err != nil {
		return nil, err
	}
	return cmRequest{r}, nil
}

func (s cmSource) addr() netip.AddrPort { return s.l.Addr() }
func (s cmSource) close() error         { return s.l.Close() }

type cmRequest struct{ r *cm.Request }

func (r cmRequest) privateData() []byte { return r.r.Param.PrivateData }

func (r cmRequest) remote() string {
	if ai, err := r.r.ID.Query(); err == nil && ai.Remote.IsValid() {
		return ai.Remote.String()
	}
	return "an unknown address"
}

func (r cmRequest) reject() { r.r.Reject(nil) }

func (r cmRequest) accept(ctx context.Context, cfg config, o *Options, peer connData) (*Conn, error) {
	s := &setup{cfg: cfg}
	cc, err := r.r.Accept(ctx, s.cmOptions(o))
	if err != nil {
		s.free()
		return nil, err
	}
	return newConn(s.v, s.mem, s.cfg, peer, o.PollTime, tcpAddr(cc.LocalAddr()), tcpAddr(cc.RemoteAddr())), nil
}

// Listener is a listening rsocket, a net.Listener. One goroutine reads the
// connection requests; each is set up in its own goroutine within
// ListenConfig.AcceptTimeout, at most ListenConfig.MaxPendingAccepts at
// once (a further request evicts the oldest), so no requester can hold up
// the others. Whatever fails on a requester's side (it rejects, vanishes,
// never completes the connection, sends connection data that is not
// rsockets') is that requester's: it is counted (Stats), reported to
// Options.Logf and skipped, and Accept goes on with the next.
type Listener struct {
	src     requestSource
	o       Options
	cfg     config
	addr    *net.TCPAddr
	timeout time.Duration
	limit   int
	ctx     context.Context // ends with Close
	cancel  context.CancelFunc
	ready   chan *Conn // set up, for Accept
	// setupErr holds a setup's failure for want of a local resource, for
	// Accept.
	setupErr chan error
	wg       sync.WaitGroup

	mu      sync.Mutex
	setups  []*pending // in progress, oldest first
	waiting int        // set up, not yet taken by Accept
	live    int        // setup goroutines alive (evicted ones included)
	stats   ListenerStats

	// loopDone is closed when the request loop ends, with loopErr.
	loopDone chan struct{}
	loopErr  error
	once     sync.Once
	closeErr error
}

// pending is one connection being set up.
type pending struct {
	cancel  context.CancelFunc
	evicted bool
}

// loop reads connection requests and starts a setup for each: evicting the
// oldest setup when MaxPendingAccepts are under way, rejecting the request
// when too many connections wait for Accept or too many setups are alive.
func (l *Listener) loop() {
	defer close(l.loopDone)
	for {
		req, err := l.src.next(l.ctx)
		if err != nil {
			if l.ctx.Err() != nil || errors.Is(err, cm.ErrClosed) {
				err = net.ErrClosed
			}
			l.loopErr = err
			return
		}
		peer, err := parseConnData(req.privateData())
		if err != nil {
			l.logf("rsocket: refused a connection request from %s: %v", l.remote(req), err)
			l.count(func(s *ListenerStats) { s.Refused++ })
			req.reject()
			continue
		}
		l.mu.Lock()
		if l.waiting >= l.limit || l.live >= 2*l.limit {
			waiting, live := l.waiting, l.live
			l.stats.Busy++
			l.mu.Unlock()
			l.logf("rsocket: rejected a connection request from %s: %d connections wait for Accept, %d setups alive", l.remote(req), waiting, live)
			req.reject()
			continue
		}
		if len(l.setups) >= l.limit {
			old := l.setups[0]
			l.setups = l.setups[1:]
			old.evicted = true
			old.cancel()
		}
		ctx, cancel := context.WithTimeout(l.ctx, l.timeout)
		p := &pending{cancel: cancel}
		l.setups = append(l.setups, p)
		l.live++
		l.mu.Unlock()
		l.wg.Add(1)
		go l.setup(ctx, p, req, peer)
	}
}

// setup accepts req (within ctx: AcceptTimeout, eviction, Close) and hands
// the connection to Accept.
func (l *Listener) setup(ctx context.Context, p *pending, req request, peer connData) {
	defer l.wg.Done()
	from := l.remote(req) // while the ID lives
	c, err := req.accept(ctx, l.cfg, &l.o, peer)
	late := ctx.Err() == context.DeadlineExceeded
	l.mu.Lock()
	if i := slices.Index(l.setups, p); i >= 0 {
		l.setups = slices.Delete(l.setups, i, i+1)
	}
	evicted := p.evicted
	l.live--
	switch {
	case err == nil:
		l.waiting++
		l.stats.Accepted++
	case l.ctx.Err() != nil:
	case late:
		l.stats.TimedOut++
		l.stats.Dropped++
	case evicted:
		l.stats.Evicted++
		l.stats.Dropped++
	case isResourceError(err):
		l.stats.Failed++
	default:
		l.stats.Dropped++
	}
	l.mu.Unlock()
	p.cancel()
	if err != nil {
		switch {
		case l.ctx.Err() != nil:
		case !late && !evicted && isResourceError(err):
			l.logf("rsocket: setting up the connection from %s failed: %v", from, err)
			select {
			case l.setupErr <- &resourceError{err}:
			default: // one is already waiting for Accept
			}
		case late:
			l.logf("rsocket: dropped the connection from %s: it was not completed within %v (%v)", from, l.timeout, err)
		case evicted:
			l.logf("rsocket: dropped the connection from %s: %d newer requests arrived while it was not completed", from, l.limit)
		default:
			l.logf("rsocket: dropped the connection from %s: %v", from, err)
		}
		return
	}
	select {
	case l.ready <- c:
	case <-l.ctx.Done():
		c.Close()
	}
	l.mu.Lock()
	l.waiting--
	l.mu.Unlock()
}

func (l *Listener) count(f func(*ListenerStats)) {
	l.mu.Lock()
	f(&l.stats)
	l.mu.Unlock()
}

// resourceError is a setup that failed for want of a local resource: a
// temporary error, as accept(2)'s EMFILE is to http.Serve.
type resourceError struct{ err error }

func (e *resourceError) Error() string {
	return "setting up an accepted connection: " + e.err.Error()
}
func (e *resourceError) Unwrap() error   { return e.err }
func (e *resourceError) Temporary() bool { return true }
func (e *resourceError) Timeout() bool   { return false }

// isResourceError reports whether a setup failed for want of a local
// resource (locked memory, file descriptors), not for its requester.
func isResourceError(err error) bool {
	return errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// Accept waits for the next connection and returns it as a net.Conn.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.AcceptRSocket(context.Background())
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AcceptRSocket is raccept: it waits for the next connection the Listener
// set up, or ctx. Requests that are not rsockets, or break the protocol,
// are rejected; requesters that give up, or do not complete the
// connection within ListenConfig.AcceptTimeout, are dropped; both are
// counted in Stats, reported to Options.Logf and skipped. It fails only
// with the Listener's own troubles: ctx's error, net.ErrClosed after
// Close, the listening ID's failure (the RDMA device went away), or a
// setup that failed for want of a local resource (ENOMEM when
// RLIMIT_MEMLOCK is too low for the rings: raise it with ulimit -l;
// EMFILE), which is a temporary net.Error (http.Serve waits and goes on).
// The caller must Close the Conn.
func (l *Listener) AcceptRSocket(ctx context.Context) (*Conn, error) {
	opErr := func(err error) error { return &net.OpError{Op: "accept", Net: "rsocket", Addr: l.addr, Err: err} }
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.setupErr:
		return nil, opErr(err)
	case <-l.loopDone:
		return nil, opErr(l.loopErr)
	case <-ctx.Done():
		return nil, opErr(ctx.Err())
	}
}

// remote is req's address for the log, "" when nothing logs: for cm's
// request it is a query, a system call, which a storm of requests would
// multiply for a log line nobody reads.
func (l *Listener) remote(req request) string {
	if l.o.Logf == nil {
		return ""
	}
	return req.remote()
}

func (l *Listener) logf(format string, args ...any) {
	if l.o.Logf != nil {
		l.o.Logf(format, args...)
	}
}

// Refused is how many connection requests were rejected for bad
// connection data (Stats().Refused).
func (l *Listener) Refused() uint64 {
	return l.Stats().Refused
}

// ListenerStats counts what a Listener did with connection requests.
type ListenerStats struct {
	Accepted uint64 // connections set up (taken by Accept or waiting for it)
	Refused  uint64 // requests rejected for connection data that is not rsockets'
	Busy     uint64 // requests rejected at once: MaxPendingAccepts connections waited for Accept
	// Dropped counts the setups that failed on the requester's side: it
	// rejected, vanished or was unreachable, or TimedOut or Evicted.
	Dropped  uint64
	TimedOut uint64 // of Dropped: not completed within AcceptTimeout (a half-open connect)
	// Failed counts the setups that failed for want of a local resource
	// (ENOMEM: RLIMIT_MEMLOCK; EMFILE, ENFILE); Accept reports them.
	Failed  uint64
	Evicted uint64 // of Dropped: evicted, still not completed, by MaxPendingAccepts newer requests
	Pending int    // setups under way now
	Waiting int    // connections set up and not yet taken by Accept now
}

// Stats is a snapshot of the Listener's counters.
func (l *Listener) Stats() ListenerStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Pending, s.Waiting = len(l.setups), l.waiting
	return s
}

// Close stops listening (rclose on the listening rsocket): Accept returns
// net.ErrClosed, the connections being set up or not yet taken by Accept
// are dropped; connections already accepted stay open. It is idempotent.
func (l *Listener) Close() error {
	l.once.Do(func() {
		l.cancel()
		<-l.loopDone
		l.wg.Wait()
		if err := l.src.close(); err != nil {
			l.closeErr = &net.OpError{Op: "close", Net: "rsocket", Addr: l.addr, Err: err}
		}
	})
	return l.closeErr
}

// Addr is the listening address (*net.TCPAddr).
func (l *Listener) Addr() net.Addr { return l.addr }

var _ net.Listener = (*Listener)(nil)
