package transfer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// DialFunc connects to a receiver for Sender.DialSend, trying for up to
// wait while nobody listens there yet (wait may be zero: one attempt);
// retries is how many of its attempts failed before it returned.
// transfer/rdma.Dialer makes one. DialSend closes the Transports it gets.
type DialFunc func(ctx context.Context, wait time.Duration) (t Transport, retries int, err error)

// Pauses between connection attempts (RetryDelay).
const (
	retryDelayMin = 50 * time.Millisecond
	retryDelayMax = time.Second
)

// RetryDelay is how long a sender pauses before its next connection
// attempt after attempt (from 0) failed: 50 ms doubling up to 1 s, each
// drawn at random from the upper half of that, so a burst of senders turned
// away together comes back spread out. DialSend and transfer/rdma.DialRetry
// use it.
func RetryDelay(attempt int) time.Duration {
	d := retryDelayMax
	if attempt < 8 {
		d = min(retryDelayMin<<attempt, retryDelayMax)
	}
	return d/2 + rand.N(d/2+1)
}

// DialSend connects with dial and sends items over the connection (Send),
// then closes it. A receiver that refuses the connection because as many
// connections as it allows are in their handshake (ErrHandshakeBusy, sent
// before anything else: a burst of senders) is treated like one that does
// not listen yet: DialSend closes the connection, pauses (RetryDelay) and
// connects again, for up to wait in all, the budget dial's own retries
// share. Report.DialRetries and Report.BusyRetries count both kinds. When
// the receiver stays busy for the whole wait the error says so
// (errors.Is(err, ErrHandshakeBusy) holds). Nothing else is retried: not
// a receiver at its connection limit (ErrBusy), not a name another
// connection is writing (the file's ErrBusy), not anything after the
// receiver's HELLO.
func (s *Sender) DialSend(ctx context.Context, dial DialFunc, wait time.Duration, items []Item) (*Report, error) {
	deadline := time.Now().Add(wait)
	var dialRetries, busy int
	for {
		t, n, err := dial(ctx, max(time.Until(deadline), 0))
		dialRetries += n
		if err != nil {
			return &Report{DialRetries: dialRetries, BusyRetries: busy}, err
		}
		rep, refused, err := s.send(ctx, t, items)
		t.Close()
		rep.DialRetries, rep.BusyRetries = dialRetries, busy
		if !refused {
			return rep, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return rep, fmt.Errorf("the receiver stayed busy for the whole wait of %v (%w; %d connections turned away): give it longer with rdmacp send --wait, or let it take more handshakes at once with rdmacp recv --max-handshakes", wait, err, busy+1)
		}
		pause := time.NewTimer(min(RetryDelay(busy), left))
		select {
		case <-ctx.Done():
			pause.Stop()
			return rep, fmt.Errorf("%w while waiting to connect again to a busy receiver (%w)", ctx.Err(), err)
		case <-pause.C:
		}
		busy++
	}
}
