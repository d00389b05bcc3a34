// Copyright 2026 The rdmago Authors.

package cm

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestRetryNoListener(t *testing.T) {
	noListener := fmt.Errorf("connect: %w", ErrNoListener)
	other := errors.New("unreachable")
	n := 0
	c, err := retryNoListener(context.Background(), func() (*Conn, error) {
		if n++; n < 4 {
			return nil, noListener
		}
		return &Conn{}, nil
	})
	if err != nil || c == nil || n != 4 {
		t.Errorf("after 3 refusals: %v %v, %d tries", c, err, n)
	}
	n = 0
	if _, err := retryNoListener(context.Background(), func() (*Conn, error) { n++; return nil, other }); err != other || n != 1 {
		t.Errorf("another error: %v after %d tries, want it at once", err, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	n = 0
	_, err = retryNoListener(ctx, func() (*Conn, error) { n++; return nil, noListener })
	if !errors.Is(err, ErrNoListener) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("until the context ends: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second || n < 2 || n > 6 {
		t.Errorf("gave up after %v and %d tries (back-off from 10 ms)", d, n)
	}
}
