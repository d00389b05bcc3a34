package rdma

// Listen and the Listener: connection requests set up concurrently.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/transfer"
)

// Listener accepts senders' connections (a transfer.Listener). One
// goroutine reads the connection requests; each is set up in its own
// goroutine within Options.AcceptTimeout, at most Options.MaxPendingAccepts at
// once (a further request evicts the oldest), so no peer can hold up the
// others: a half-open connect (the REP answered by no RTU) holds one
// pending slot until AcceptTimeout or until newer requests push it out.
// A request carrying rsockets' connection data (rcopy's client, a program
// under librspreload) is rejected at once and reported (Options.Warnf).
type Listener struct {
	l      *cm.Listener
	cfg    Options
	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	ready  chan *Transport // set up, for Accept
	// refused counts the requests refused for speaking rsockets.
	refused atomic.Int64
	wg      sync.WaitGroup // the setup goroutines

	mu      sync.Mutex
	setups  []*setup // in progress, oldest first
	waiting int      // set up, not yet taken by Accept
	live    int      // setup goroutines alive (evicted ones included)

	// loopDone is closed when the request loop ends, with loopErr.
	loopDone chan struct{}
	loopErr  error
	once     sync.Once
	closeErr error
}

// Listen listens on addr ("host:port", empty host for every RDMA device;
// the port defaults to DefaultPort): rdma_bind_addr and rdma_listen through
// cm.Listen, and starts reading requests. The caller must Close it.
func Listen(ctx context.Context, addr string, opts *Options) (*Listener, error) {
	cfg := opts.value()
	addr = withDefaultPort(addr)
	cl, err := cm.Listen(ctx, addr, &cm.Options{Logf: cfg.Logf, ReuseAddr: true})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	l := &Listener{l: cl, cfg: cfg, ready: make(chan *Transport), loopDone: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	go l.loop()
	return l, nil
}

// setup is one connection being set up.
type setup struct {
	cancel  context.CancelFunc
	evicted bool
}

// loop reads connection requests and starts a setup for each: evicting the
// oldest setup when MaxPendingAccepts are under way, rejecting the request
// when too many connections wait for Accept or too many setups are alive.
func (l *Listener) loop() {
	defer close(l.loopDone)
	limit := l.cfg.maxPending()
	for {
		req, err := l.l.AcceptRequest(l.ctx)
		if err != nil {
			if l.ctx.Err() != nil {
				err = fmt.Errorf("accept on %v: %w", l.l.Addr(), cm.ErrClosed)
			}
			l.loopErr = err
			return
		}
		if foreign, _ := peerData(req.Param.PrivateData); foreign {
			l.refuse(req)
			continue
		}
		l.mu.Lock()
		if l.waiting >= limit || l.live >= 2*limit {
			waiting, live := l.waiting, l.live
			l.mu.Unlock()
			l.logf("accept: %d connections wait for Accept, %d setups alive: request rejected", waiting, live)
			req.Reject([]byte(busyText))
			continue
		}
		if len(l.setups) >= limit {
			old := l.setups[0]
			l.setups = l.setups[1:]
			old.evicted = true
			old.cancel()
		}
		ctx, cancel := context.WithTimeout(l.ctx, l.cfg.acceptTimeout())
		s := &setup{cancel: cancel}
		l.setups = append(l.setups, s)
		l.live++
		l.mu.Unlock()
		l.wg.Add(1)
		go l.setup(ctx, s, req)
	}
}

// setup accepts req (within ctx: AcceptTimeout, eviction, Close) and hands
// the connection to Accept.
func (l *Listener) setup(ctx context.Context, s *setup, req *cm.Request) {
	defer l.wg.Done()
	t := newTransport(l.cfg, true)
	c, err := req.Accept(ctx, t.options())
	late := ctx.Err() == context.DeadlineExceeded
	l.mu.Lock()
	if i := slices.Index(l.setups, s); i >= 0 {
		l.setups = slices.Delete(l.setups, i, i+1)
	}
	evicted := s.evicted
	l.live--
	if err == nil {
		l.waiting++
	}
	l.mu.Unlock()
	s.cancel()
	if err != nil {
		switch {
		case late:
			l.logf("accept: the peer did not complete the connection within %v: dropped (%v)", l.cfg.acceptTimeout(), err)
		case evicted:
			l.logf("accept: %d newer requests arrived while the peer did not complete the connection: dropped", l.cfg.maxPending())
		case l.ctx.Err() == nil:
			l.logf("accept: %v", err)
		}
		return
	}
	t.start(c)
	select {
	case l.ready <- t:
	case <-l.ctx.Done():
		t.Close()
	}
	l.mu.Lock()
	l.waiting--
	l.mu.Unlock()
}

// refuseText is the private data of the reject a Listener answers an
// rsockets peer with (its rconnect fails with ECONNREFUSED either way).
const refuseText = "rdmacp receiver: rsockets connections are refused"

// refuse rejects a connection request from a peer speaking rsockets and
// says so (Options.Warnf, else Logf): the listener goes on serving others.
func (l *Listener) refuse(req *cm.Request) {
	from := "an unknown address"
	if a, err := req.ID.Query(); err == nil && a.Remote.IsValid() {
		from = a.Remote.String()
	}
	err := req.Reject([]byte(refuseText))
	l.refused.Add(1)
	warn := l.cfg.Warnf
	if warn == nil {
		warn = l.logf
	}
	if err != nil {
		warn("a peer speaking %s tried to connect from %s: refused (%v)", rsocketPeer, from, err)
		return
	}
	warn("a peer speaking %s tried to connect from %s: refused", rsocketPeer, from)
}

// Refused is how many connection requests the listener refused because
// the peer speaks rsockets.
func (l *Listener) Refused() int { return int(l.refused.Load()) }

func (l *Listener) logf(format string, args ...any) {
	if l.cfg.Logf != nil {
		l.cfg.Logf(format, args...)
	}
}

// Accept waits for the next sender whose connection is set up. A request
// that fails to set up (or within AcceptTimeout) is rejected or dropped and
// logged; Accept returns an error only when the listener or ctx ends.
func (l *Listener) Accept(ctx context.Context) (transfer.Transport, error) {
	select {
	case t := <-l.ready:
		return t, nil
	case <-l.loopDone:
		return nil, l.loopErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops listening and drops the connections being set up or not yet
// taken by Accept. It is idempotent.
func (l *Listener) Close() error {
	l.once.Do(func() {
		l.cancel()
		<-l.loopDone
		l.wg.Wait()
		l.closeErr = l.l.Close()
	})
	return l.closeErr
}

// Addr is the address listened on.
func (l *Listener) Addr() string { return l.l.Addr().String() }
