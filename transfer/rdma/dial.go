package rdma

// Dial, its retries, and the transfer.DialFunc a Sender uses.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/retry"
	"github.com/rdmago/rdmago/transfer"
)

// Dial connects to a receiver at addr ("host:port"; the port defaults to
// DefaultPort): rdma_resolve_addr, rdma_resolve_route, rdma_connect through
// cm.Dial, with the control messages' receives posted before the
// connection is up (a sender needs no more; see PrepareWrites). It fails
// with cm's errors (cm.ErrNoListener, ..., uverbs.ErrNoDevice) as they
// come, unless opts.WaitForListener makes it wait for a receiver that is
// starting. A receiver that accepts with rsockets' connection data (rcopy's
// server, rstream -s, a program under librspreload) is disconnected at once
// and the error, matching ErrForeignPeer, says so; so does a program that
// rejects WaitForListener's requests again and again without a word, as
// an rsockets server does. The caller must Close the Transport.
func Dial(ctx context.Context, addr string, opts *Options) (*Transport, error) {
	cfg := opts.value()
	if cfg.WaitForListener {
		t, _, err := dialRetry(ctx, addr, cfg, -1)
		return t, err
	}
	return dialOnce(ctx, addr, cfg)
}

// dialOnce is one connection attempt.
func dialOnce(ctx context.Context, addr string, cfg Options) (*Transport, error) {
	addr = withDefaultPort(addr)
	t := newTransport(cfg, false)
	c, err := cm.Dial(ctx, addr, t.options())
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	// rdmacp's receiver accepts with no private data: an rsockets
	// server's rs_conn_data means whatever is sent next would only
	// break its QP and leave this end to time out.
	switch foreign, other := peerData(c.Peer().PrivateData); {
	case foreign:
		c.Close()
		return nil, foreignReceiver(addr)
	case other != "" && cfg.Logf != nil:
		cfg.Logf("connect to %s: the receiver accepted with %s: it may not be rdmacp", addr, other)
	}
	t.start(c)
	return t, nil
}

// dialRetry is dialOnce retried for up to wait (negative: until ctx ends)
// while nobody listens at addr yet (or its CM does not answer), pausing
// retry.Delay between attempts (50 ms doubling to 1 s, jittered). It
// returns how many attempts failed before the result. A program that
// rejects silentRejects requests in a row without a word (an rsockets
// server does: rdmacp's request carries no rs_conn_data; an rdmacp
// receiver says why it rejects) ends it with an error matching
// ErrForeignPeer.
func dialRetry(ctx context.Context, addr string, cfg Options, wait time.Duration) (*Transport, int, error) {
	deadline := time.Now().Add(wait)
	silent := 0
	for retries := 0; ; retries++ {
		t, err := dialOnce(ctx, addr, cfg)
		if silentReject(err) {
			if silent++; silent == silentRejects {
				return nil, retries, foreignRejecter(withDefaultPort(addr), silent, err)
			}
		} else {
			silent = 0
		}
		pause := retry.Delay(retries)
		if err == nil || !retryable(err) || (wait >= 0 && time.Now().Add(pause).After(deadline)) {
			return t, retries, err
		}
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, retries, err
		case <-timer.C:
		}
	}
}

// Dialer is how a transfer.Sender's DialSend connects to addr with opts:
// its DialFunc dials as Dial with WaitForListener does, for up to the wait
// DialSend gives it, and counts the attempts that failed (the Report's
// DialRetries). DialSend also waits out a receiver busy with other
// senders' handshakes within the same wait. A nil opts means every default.
func Dialer(addr string, opts *Options) transfer.DialFunc {
	cfg := opts.value()
	return func(ctx context.Context, wait time.Duration) (transfer.Transport, int, error) {
		t, n, err := dialRetry(ctx, addr, cfg, wait)
		if err != nil {
			return nil, n, err // not a nil *Transport in the interface
		}
		return t, n, nil
	}
}

// retryable reports whether a Dial error may go away by itself: nobody
// listens yet, or the peer's CM did not answer.
func retryable(err error) bool {
	return errors.Is(err, cm.ErrNoListener) || errors.Is(err, cm.ErrRejected) || errors.Is(err, cm.ErrUnreachable)
}

// withDefaultPort adds DefaultPort to an address without a port.
func withDefaultPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(addr, strconv.Itoa(DefaultPort))
}
