package transfer

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmago/rdmago/internal/retry"
)

// DialFunc connects to a receiver for Sender.DialSend, trying for up to
// wait while nobody listens there yet (wait may be zero: one attempt);
// retries is how many of its attempts failed before it returned.
// transfer/rdma.Dialer makes one. DialSend closes the Transports it gets.
type DialFunc func(ctx context.Context, wait time.Duration) (t Transport, retries int, err error)

// DialSend connects with dial and sends items over the connection (Send),
// then closes it. A receiver that refuses the connection because as many
// connections as it allows are in their handshake (ErrHandshakeBusy, sent
// before anything else: a burst of senders) is treated like one that does
// not listen yet: DialSend closes the connection, pauses (50 ms doubling up to 1 s, jittered) and
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
			return rep, fmt.Errorf("the receiver stayed busy for the whole wait of %v (%w; %d connections turned away): give DialSend a longer wait, or let the receiver take more handshakes at once (Receiver.MaxHandshakes)", wait, err, busy+1)
		}
		pause := time.NewTimer(min(retry.Delay(busy), left))
		select {
		case <-ctx.Done():
			pause.Stop()
			return rep, fmt.Errorf("%w while waiting to connect again to a busy receiver (%w)", ctx.Err(), err)
		case <-pause.C:
		}
		busy++
	}
}
