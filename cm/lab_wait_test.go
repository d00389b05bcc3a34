// Copyright 2026 The rdmago Authors.

//go:build linux

package cm

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/uverbs"
)

// TestLabWaitEndsOnDisconnect: a side waiting on an empty CQ, with nothing
// posted (so no flush can wake it) and a long deadline, returns promptly
// with ErrDisconnected when the peer disconnects; before Conn.Wait watched
// the connection, such a wait slept until its deadline.
func TestLabWaitEndsOnDisconnect(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 120*time.Second)
	port := labPort(20)
	const waitDeadline = 100 * time.Second
	connected := make(chan struct{})
	serve := func() error {
		l, err := Listen(ctx, e.Addr+":"+port, &Options{Logf: testLogf(t), ReuseAddr: true})
		if err != nil {
			return err
		}
		defer l.Close()
		c, err := l.Accept(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		close(connected)
		wctx, cancel := context.WithTimeout(ctx, waitDeadline)
		defer cancel()
		start := time.Now()
		var wcs [4]uverbs.WC
		n, _, err := c.Wait(wctx, wcs[:])
		took := time.Since(start)
		if n != 0 || !errors.Is(err, ErrDisconnected) {
			return fmt.Errorf("Wait on an empty CQ when the peer disconnected = %d, %v; want ErrDisconnected", n, err)
		}
		if took > waitDeadline/4 {
			return fmt.Errorf("Wait returned after %v, not promptly at the disconnect", took)
		}
		t.Logf("server: the wait ended after %v: %v", took, err)
		// Later waits end at once, for every CQ of the connection.
		if _, _, err := c.Wait(wctx, wcs[:], c.RecvCQ()); !errors.Is(err, ErrDisconnected) {
			return fmt.Errorf("second Wait = %v, want ErrDisconnected", err)
		}
		return c.Close()
	}
	client := func() error {
		c, err := dialRetry(ctx, e.Peer+":"+port, &Options{Logf: testLogf(t)})
		if err != nil {
			return err
		}
		if !e.TwoNodes {
			<-connected
		}
		time.Sleep(500 * time.Millisecond) // let the server start waiting
		return c.Close()
	}
	e.RunRoles(t, serve, client)
}
