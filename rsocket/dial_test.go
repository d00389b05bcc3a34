// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
)

// TestRetryNoListener: WaitForListener's loop dials again while nothing
// listens, stops at the first other outcome, and when its context ends
// returns the last refusal joined with the context's error.
func TestRetryNoListener(t *testing.T) {
	refused := fmt.Errorf("rdma_cm connect 10.0.0.1:7471: %w", cm.ErrNoListener)
	other := errors.New("some other failure")

	calls := 0
	v, err := retryNoListener(context.Background(), func() (int, error) {
		calls++
		if calls < 4 {
			return 0, refused
		}
		return 42, nil
	})
	if v != 42 || err != nil || calls != 4 {
		t.Fatalf("refused 3 times then connected: got %d, %v after %d dials; want 42, nil after 4", v, err, calls)
	}

	calls = 0
	_, err = retryNoListener(context.Background(), func() (int, error) {
		calls++
		if calls < 2 {
			return 0, refused
		}
		return 0, other
	})
	if err != other || calls != 2 {
		t.Fatalf("refused then another failure: got %v after %d dials; want %v after 2", err, calls, other)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	calls = 0
	_, err = retryNoListener(ctx, func() (int, error) { calls++; return 0, refused })
	if !errors.Is(err, cm.ErrNoListener) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("refused until the deadline: %v; want it to match cm.ErrNoListener and context.DeadlineExceeded", err)
	}
	if el := time.Since(start); el > 2*time.Second || calls < 2 {
		t.Fatalf("refused until a 100 ms deadline: returned after %v and %d dials", el, calls)
	}
}

// TestNoListenerHint: a refusal by a port nobody listens on says why a C
// server under librspreload may not be listening on RDMA, and still
// matches cm.ErrNoListener; other errors are left alone.
func TestNoListenerHint(t *testing.T) {
	err := noListenerHint(fmt.Errorf("rdma_cm connect: %w", cm.ErrNoListener))
	if !errors.Is(err, cm.ErrNoListener) || !strings.Contains(err.Error(), "SOCK_CLOEXEC") || !strings.Contains(err.Error(), "accept4") {
		t.Fatalf("no listener: %v", err)
	}
	other := errors.New("other")
	if noListenerHint(other) != other {
		t.Fatal("noListenerHint changed an unrelated error")
	}
}

// TestDialerChecksFirst: DialContext and Dial return a nil net.Conn (not
// a nil *Conn in an interface) with the *net.OpError of a bad network.
func TestDialerChecksFirst(t *testing.T) {
	var d Dialer
	c, err := d.Dial("udp", "10.0.0.1:7471")
	var oe *net.OpError
	if c != nil || !errors.As(err, &oe) || oe.Op != "dial" {
		t.Fatalf("Dial udp: %v, %v", c, err)
	}
	var lc ListenConfig
	l, err := lc.Listen(context.Background(), "unix", "x")
	if l != nil || !errors.As(err, &oe) || oe.Op != "listen" {
		t.Fatalf("Listen unix: %v, %v", l, err)
	}
}

// TestOptionsErrorsNameField: a setting out of range is refused with an
// error naming the Options field.
func TestOptionsErrorsNameField(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Inline: -2}, "Options.Inline"},
		{Options{SendBuffer: 100}, "Options.SendBuffer"},
		{Options{RecvBuffer: 100}, "Options.RecvBuffer"},
	} {
		d := Dialer{Options: tc.o}
		if _, err := d.DialRSocket(context.Background(), "tcp", "10.0.0.1:7471"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.o, err, tc.want)
		}
	}
}
