// Copyright 2026 The rdmago Authors.

package cm

// Listener.Accept: connection requests set up concurrently, each within a
// deadline, so that no requester holds up the others.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Listener defaults (Options.AcceptTimeout, Options.MaxPendingAccepts).
const (
	DefaultAcceptTimeout     = 10 * time.Second
	DefaultMaxPendingAccepts = 64
)

// ListenerStats counts what a Listener's Accept did with connection
// requests.
type ListenerStats struct {
	Accepted uint64 // connections set up (taken by Accept or waiting for it)
	Refused  uint64 // requests Options.CheckRequest refused
	Busy     uint64 // requests rejected at once: MaxPendingAccepts connections waited for Accept
	// Dropped counts the setups that failed on the requester's side: it
	// rejected, vanished or was unreachable, or TimedOut or Evicted.
	Dropped  uint64
	TimedOut uint64 // of Dropped: not completed within AcceptTimeout (a half-open connect)
	// Failed counts the setups that failed on this side (the device, the
	// PD, CQs or QP, Options.Setup or PrivateDataFunc); Accept reports
	// them.
	Failed  uint64
	Evicted uint64 // of Dropped: evicted, still not completed, by MaxPendingAccepts newer requests
	Pending int    // setups under way now
	Waiting int    // connections set up and not yet taken by Accept now
}

// acceptLoop is what Accept runs: one goroutine reading the requests, one
// per setup.
type acceptLoop struct {
	l        *Listener
	timeout  time.Duration
	limit    int
	ctx      context.Context // ends with Close
	cancel   context.CancelFunc
	ready    chan *Conn // set up, for Accept
	setupErr chan error // a setup's failure on this side, for Accept
	wg       sync.WaitGroup

	// Under l.mu:
	setups  []*pendingSetup // in progress, oldest first
	waiting int             // set up, not yet taken by Accept
	live    int             // setup goroutines alive (evicted ones included)
	stats   ListenerStats

	done chan struct{} // closed when the request loop ends, with err
	err  error
}

// pendingSetup is one connection being set up.
type pendingSetup struct {
	cancel  context.CancelFunc
	evicted bool
}

// Accept waits for the next connection the Listener set up and returns
// it, as net.Listener.Accept does (rdma_get_request + rdma_accept, run
// for each request in its own goroutine). The first call starts the
// Listener's request loop, which from then on reads every request: it
// asks Options.CheckRequest, then sets the connection up (the QP, the
// accept, the wait for ESTABLISHED) within Options.AcceptTimeout, at most
// Options.MaxPendingAccepts at once (a further request evicts the oldest),
// so no requester can hold up the others: a half-open connect (the REP
// answered by no RTU) holds one pending setup until AcceptTimeout or
// until newer requests push it out. Whatever fails on a requester's side
// (it rejects, vanishes, is unreachable, does not complete the connection
// in time, is refused by CheckRequest) is counted (Stats), logged
// (Options.Logf) and skipped.
//
// Accept fails only with the Listener's own troubles: ctx's error,
// ErrClosed after Close, the listening ID's failure (ErrDeviceRemoved),
// or a setup that failed on this side (the device, PD, CQs or QP could
// not be created, ENOMEM when RLIMIT_MEMLOCK is too low: raise it with
// ulimit -l; Options.Setup or PrivateDataFunc failed). Such a failure
// is temporary: its Temporary method says true, as accept(2)'s EMFILE is
// to http.Serve, and the next Accept goes on. The caller must Close the
// Conn.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	lp, err := l.startLoop()
	if err != nil {
		return nil, err
	}
	select {
	case c := <-lp.ready:
		return c, nil
	case err := <-lp.setupErr:
		return nil, err
	case <-lp.done:
		return nil, lp.err
	case <-ctx.Done():
		return nil, fmt.Errorf("rdma_cm accept on %v: %w", l.addr, ctx.Err())
	}
}

// startLoop starts Accept's request loop unless it runs.
func (l *Listener) startLoop() (*acceptLoop, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("rdma_cm accept on %v: %w", l.addr, ErrClosed)
	}
	if l.loop == nil {
		lp := &acceptLoop{
			l:        l,
			timeout:  l.o.AcceptTimeout,
			limit:    l.o.MaxPendingAccepts,
			ready:    make(chan *Conn),
			setupErr: make(chan error, 1),
			done:     make(chan struct{}),
		}
		if lp.timeout == 0 {
			lp.timeout = DefaultAcceptTimeout
		}
		if lp.limit == 0 {
			lp.limit = DefaultMaxPendingAccepts
		}
		lp.ctx, lp.cancel = context.WithCancel(context.Background())
		l.loop = lp
		go lp.run()
	}
	return l.loop, nil
}

// Stats is a snapshot of what Accept did with connection requests (zero
// before the first Accept).
func (l *Listener) Stats() ListenerStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loop == nil {
		return ListenerStats{}
	}
	s := l.loop.stats
	s.Pending, s.Waiting = len(l.loop.setups), l.loop.waiting
	return s
}

// stop ends the loop and its setups (Close).
func (lp *acceptLoop) stop() {
	lp.cancel()
	<-lp.done
	lp.wg.Wait()
}

func (lp *acceptLoop) logf(format string, args ...any) { lp.l.o.logf(format, args...) }

// run reads connection requests and starts a setup for each: evicting the
// oldest setup when MaxPendingAccepts are under way, rejecting the request
// when too many connections wait for Accept or too many setups are alive.
func (lp *acceptLoop) run() {
	defer close(lp.done)
	l := lp.l
	for {
		r, err := l.nextRequest(lp.ctx)
		if err != nil {
			if lp.ctx.Err() != nil {
				err = fmt.Errorf("rdma_cm accept on %v: %w", l.addr, ErrClosed)
			}
			lp.err = err
			return
		}
		var opts *Options
		if l.o.CheckRequest != nil {
			from := lp.requester(r) // before CheckRequest may reject it
			if opts, err = l.o.CheckRequest(r); err != nil {
				r.Reject(nil) // unless CheckRequest answered it
				lp.count(func(s *ListenerStats) { s.Refused++ })
				lp.logf("rdma_cm: refused the connection request from %s: %v", from, err)
				continue
			}
		}
		l.mu.Lock()
		if lp.waiting >= lp.limit || lp.live >= 2*lp.limit {
			waiting, live := lp.waiting, lp.live
			lp.stats.Busy++
			l.mu.Unlock()
			lp.logf("rdma_cm: rejected the connection request from %s: %d connections wait for Accept, %d setups alive", lp.requester(r), waiting, live)
			r.Reject(l.o.BusyRejectData)
			continue
		}
		if len(lp.setups) >= lp.limit {
			old := lp.setups[0]
			lp.setups = lp.setups[1:]
			old.evicted = true
			old.cancel()
		}
		ctx, cancel := context.WithTimeout(lp.ctx, lp.timeout)
		p := &pendingSetup{cancel: cancel}
		lp.setups = append(lp.setups, p)
		lp.live++
		l.mu.Unlock()
		lp.wg.Add(1)
		go lp.setup(ctx, p, r, opts)
	}
}

// requester names r's requester for the log (only when there is one: it
// asks the kernel).
func (lp *acceptLoop) requester(r *Request) string {
	if lp.l.o.Logf == nil {
		return ""
	}
	if a, err := r.ID.Query(); err == nil && a.Remote.IsValid() {
		return a.Remote.String()
	}
	return "an unknown address"
}

func (lp *acceptLoop) count(f func(*ListenerStats)) {
	lp.l.mu.Lock()
	f(&lp.stats)
	lp.l.mu.Unlock()
}

// setup accepts r with opts (within ctx: AcceptTimeout, eviction, Close)
// and hands the connection to Accept.
func (lp *acceptLoop) setup(ctx context.Context, p *pendingSetup, r *Request, opts *Options) {
	defer lp.wg.Done()
	from := lp.requester(r) // while the ID lives
	c, requester, err := r.accept(ctx, opts)
	late := errors.Is(ctx.Err(), context.DeadlineExceeded)
	closing := lp.ctx.Err() != nil
	l := lp.l
	l.mu.Lock()
	if i := slices.Index(lp.setups, p); i >= 0 {
		lp.setups = slices.Delete(lp.setups, i, i+1)
	}
	evicted := p.evicted
	local := err != nil && !closing && !late && !evicted && !requester
	lp.live--
	switch {
	case err == nil:
		lp.waiting++
		lp.stats.Accepted++
	case closing:
	case late:
		lp.stats.TimedOut++
		lp.stats.Dropped++
	case evicted:
		lp.stats.Evicted++
		lp.stats.Dropped++
	case local:
		lp.stats.Failed++
	default:
		lp.stats.Dropped++
	}
	l.mu.Unlock()
	p.cancel()
	if err != nil {
		switch {
		case closing:
		case late:
			lp.logf("rdma_cm: dropped the connection from %s: the requester did not complete the connection within %v (%v)", from, lp.timeout, err)
		case evicted:
			lp.logf("rdma_cm: dropped the connection from %s: %d newer requests arrived while the requester did not complete it", from, lp.limit)
		case local:
			lp.logf("rdma_cm: setting up the connection from %s failed: %v", from, err)
			select {
			case lp.setupErr <- &setupError{err}:
			default: // one is already waiting for Accept
			}
		default:
			lp.logf("rdma_cm: dropped the connection from %s: %v", from, err)
		}
		return
	}
	select {
	case lp.ready <- c:
	case <-lp.ctx.Done():
		c.Close()
	}
	l.mu.Lock()
	lp.waiting--
	l.mu.Unlock()
}

// setupError is a setup that failed on this side: a temporary error, as
// accept(2)'s EMFILE is to http.Serve.
type setupError struct{ err error }

func (e *setupError) Error() string   { return e.err.Error() }
func (e *setupError) Unwrap() error   { return e.err }
func (e *setupError) Temporary() bool { return true }
func (e *setupError) Timeout() bool   { return false }
