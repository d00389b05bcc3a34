// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rdmago/rdmago/internal/escape"
	"github.com/rdmago/rdmago/transfer"
)

// The receiver's log limit: per peer address, the first logBurst failed
// connections of each logInterval are printed in full, the rest summed up
// in one line when the interval ends (or at exit); at most logPeers
// addresses are tracked, the oldest evicted (its summary printed then).
const (
	logBurst    = 5
	logInterval = time.Minute
	logPeers    = 1024
	logReasons  = 8 // distinct reasons counted per address; more are "other"
)

// connLimiter decides which failed connections recv prints in full, so
// that a storm of hostile connections cannot fill the disk with its log.
// It is not safe for concurrent use (connReporter holds a mutex).
type connLimiter struct {
	now      func() time.Time
	interval time.Duration
	burst    int
	max      int
	peers    map[string]*peerCount
}

// peerCount is one address's interval.
type peerCount struct {
	start   time.Time
	shown   int
	more    int
	reasons map[string]int
}

func newConnLimiter(now func() time.Time, interval time.Duration, burst, max int) *connLimiter {
	return &connLimiter{now: now, interval: interval, burst: burst, max: max, peers: map[string]*peerCount{}}
}

// admit counts a failed connection from addr for reason: it reports
// whether to print it in full, and returns the summaries due now (addr's
// ended interval, an evicted address).
func (l *connLimiter) admit(addr, reason string) (bool, []string) {
	now := l.now()
	var due []string
	p := l.peers[addr]
	if p != nil && now.Sub(p.start) >= l.interval {
		due = appendSummary(due, addr, p, now)
		p = nil
	}
	if p == nil {
		if _, ok := l.peers[addr]; !ok && len(l.peers) >= l.max {
			due = l.evictOldest(due, now)
		}
		p = &peerCount{start: now}
		l.peers[addr] = p
	}
	if p.shown < l.burst {
		p.shown++
		return true, due
	}
	p.more++
	if p.reasons == nil {
		p.reasons = map[string]int{}
	}
	if _, ok := p.reasons[reason]; !ok && len(p.reasons) >= logReasons {
		reason = "other"
	}
	p.reasons[reason]++
	return false, due
}

func (l *connLimiter) evictOldest(due []string, now time.Time) []string {
	var oldest string
	var op *peerCount
	for a, p := range l.peers {
		if op == nil || p.start.Before(op.start) || p.start.Equal(op.start) && a < oldest {
			oldest, op = a, p
		}
	}
	if op != nil {
		delete(l.peers, oldest)
		due = appendSummary(due, oldest, op, now)
	}
	return due
}

// flush returns the summaries of the intervals ended by now (of all
// addresses when all, at exit), in address order, and forgets them.
func (l *connLimiter) flush(all bool) []string {
	now := l.now()
	addrs := make([]string, 0, len(l.peers))
	for a, p := range l.peers {
		if all || now.Sub(p.start) >= l.interval {
			addrs = append(addrs, a)
		}
	}
	sort.Strings(addrs)
	var due []string
	for _, a := range addrs {
		due = appendSummary(due, a, l.peers[a], now)
		delete(l.peers, a)
	}
	return due
}

// appendSummary appends addr's summary line if it suppressed any.
func appendSummary(due []string, addr string, p *peerCount, now time.Time) []string {
	if p.more == 0 {
		return due
	}
	type rc struct {
		r string
		n int
	}
	rs := make([]rc, 0, len(p.reasons))
	for r, n := range p.reasons {
		rs = append(rs, rc{r, n})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].n > rs[j].n || rs[i].n == rs[j].n && rs[i].r < rs[j].r })
	var b strings.Builder
	for i, x := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", x.r, x.n)
	}
	d := now.Sub(p.start)
	if d >= time.Second {
		d = d.Round(time.Second)
	} else {
		d = d.Round(time.Millisecond)
	}
	return append(due, fmt.Sprintf("%d more connections from %s failed (%s) in the last %v",
		p.more, escape.Text(addr), escape.Text(b.String()), d))
}

// peerHost is the address a connection counts under: its host, not port.
func peerHost(peer string) string {
	if h, _, err := net.SplitHostPort(peer); err == nil {
		return h
	}
	if peer == "" {
		return "an unknown address"
	}
	return peer
}

// reasonOf names why a connection failed, for the summary.
func reasonOf(err error) string {
	var te *transfer.Error
	switch {
	case errors.As(err, &te):
		return te.Code.String()
	case errors.Is(err, transfer.ErrPeerGone):
		return "peer gone"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	return "other"
}

// connReporter prints recv's per-connection report, its failed
// connections rate-limited per peer address by lim.
type connReporter struct {
	mu             sync.Mutex // one connection's lines at a time
	stdout, stderr io.Writer
	c              *common
	lim            *connLimiter
}

func (r *connReporter) report(rep *transfer.ConnReport, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		recvReport(r.stdout, r.stderr, r.c, rep, err)
		return
	}
	peer := ""
	if rep != nil {
		peer = rep.Peer
	}
	show, due := r.lim.admit(peerHost(peer), reasonOf(err))
	r.printLocked(due)
	if show {
		recvReport(r.stdout, r.stderr, r.c, rep, err)
	} else {
		recvReport(r.stdout, io.Discard, r.c, rep, err) // --json's line only
	}
}

// refusedReason is what a refused connection request counts under in the
// summary.
const refusedReason = "refused, speaks rsockets"

// refuse prints the line of a connection request the listener refused
// (rdma.Options.OnRefuse), rate-limited per peer address together with
// the failed connections: a peer can send requests at will.
func (r *connReporter) refuse(peer netip.AddrPort, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	host := ""
	if peer.IsValid() {
		host = peer.String()
	}
	show, due := r.lim.admit(peerHost(host), refusedReason)
	r.printLocked(due)
	if show {
		fmt.Fprintf(r.stderr, "rdmacp: %s\n", msg)
	}
}

// flush prints the summaries due: of ended intervals, or all at exit.
func (r *connReporter) flush(all bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.printLocked(r.lim.flush(all))
}

func (r *connReporter) printLocked(due []string) {
	for _, s := range due {
		fmt.Fprintf(r.stderr, "rdmacp: %s\n", s)
	}
}

// run prints the summaries of ended intervals (within a quarter of one)
// until ctx is done.
func (r *connReporter) run(ctx context.Context) {
	tk := time.NewTicker(r.lim.interval / 4)
	defer tk.Stop()
	for {
		select {
		case <-tk.C:
			r.flush(false)
		case <-ctx.Done():
			return
		}
	}
}
