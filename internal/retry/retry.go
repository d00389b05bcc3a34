// Package retry paces connection attempts: package transfer's DialSend
// (a receiver busy with handshakes) and transfer/rdma's Dial (a receiver
// not listening yet) share Delay; cm's and rsocket's WaitForListener
// share Backoff.
package retry

import (
	"math/rand/v2"
	"time"
)

// Pauses between connection attempts.
const (
	delayMin = 50 * time.Millisecond
	delayMax = time.Second
)

// Delay is how long to pause before the next connection attempt after
// attempt (from 0) failed: 50 ms doubling up to 1 s, each drawn at random
// from the upper half of that, so a burst of senders turned away together
// comes back spread out.
func Delay(attempt int) time.Duration {
	d := delayMax
	if attempt < 8 {
		d = min(delayMin<<attempt, delayMax)
	}
	return d/2 + rand.N(d/2+1)
}
