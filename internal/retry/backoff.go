// Copyright 2026 The rdmago Authors.

package retry

import (
	"context"
	"time"
)

// Backoff calls try until it succeeds, fails with an error again does not
// accept, or ctx ends, pausing first between the calls and doubling the
// pause up to max. It returns try's last error and, when ctx ended the
// wait, ctx's error. cm's and rsocket's WaitForListener share it.
func Backoff(ctx context.Context, first, max time.Duration, again func(error) bool, try func() error) (last, ctxErr error) {
	pause := first
	for {
		err := try()
		if err == nil || !again(err) {
			return err, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err, ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, max)
	}
}
