// Copyright 2026 The rdmago Authors.

package labtest

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Context is a context that ends after d or with the test.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// RunRoles runs the two sides of a test: with one node serve in a goroutine
// and client here, both errors reported (a serving side that stops without
// returning, as t.FailNow in its goroutine does, fails t too); with two
// nodes (e.TwoNodes) only this node's side, serve on node 0 and client on
// node 1, whose error fails t at once.
func (e Env) RunRoles(t testing.TB, serve, client func() error) {
	t.Helper()
	if e.TwoNodes {
		f := client
		if e.Server() {
			f = serve
		}
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return
	}
	errs := make(chan error, 1)
	go func() {
		err := errors.New("the serving side stopped without returning (a FailNow in its goroutine?)")
		defer func() { errs <- err }()
		err = serve()
	}()
	if err := client(); err != nil {
		t.Error(err)
	}
	if err := <-errs; err != nil {
		t.Error(err)
	}
}

// Retry calls f until it succeeds, fails with an error again does not
// accept, or ctx is done (it then returns f's last error), pausing 100 ms
// between calls: a client dialing a server the other node may still be
// starting retries while nothing listens.
func Retry[T any](ctx context.Context, again func(error) bool, f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if err == nil || !again(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
