// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/tools/ping"
)

// newLink wraps an rdma_cm connection for the protocols.
func newLink(conn *cm.Conn, c *config) *ping.Link {
	return &ping.Link{
		QP: conn.QP(), PD: conn.PD(), SendCQ: conn.SendCQ(), RecvCQ: conn.RecvCQ(), Wait: conn.Wait,
		Done: conn.Done(), Err: conn.Err, RegMR: conn.RegMR, Logf: c.logf(), Debugf: c.debugf(),
	}
}

// rpingOptions are rping's connection settings: a 16-deep send queue, two
// receives, a 32-entry CQ on a completion channel, one RDMA READ in flight
// each way, 7 retries.
func (c *config) rpingOptions(setup func(*cm.Conn) error) (*cm.Options, error) {
	src, err := sourceAddr(c.source)
	if err != nil {
		return nil, err
	}
	return &cm.Options{
		Source: src, SendDepth: ping.RpingSendDepth, RecvDepth: ping.RpingRecvDepth, CQSize: ping.RpingCQSize,
		InitiatorDepth: 1, ResponderResources: 1, RetryCount: 7, RNRRetryCount: 7, Backlog: 3,
		TOS: uint8(c.tos), Logf: c.logf(), Setup: setup,
	}, nil
}

func (c *config) rpingConfig() ping.RpingConfig {
	count := c.count
	if count < 0 {
		count = 0 // rping pings forever without -C
	}
	return ping.RpingConfig{Size: c.size, Count: count, Verbose: c.verbose, Validate: c.validate, Out: c.stdout}
}

func runRping(ctx context.Context, c *config) error {
	if c.client {
		r, err := ping.NewRping(c.rpingConfig())
		if err != nil {
			return err
		}
		o, err := c.rpingOptions(func(conn *cm.Conn) error { return r.Setup(newLink(conn, c), true) })
		if err != nil {
			return err
		}
		conn, err := cm.Dial(ctx, hostPort(c.addr, c.port), o)
		if err != nil {
			return fmt.Errorf("connect error: %w", err)
		}
		perr := r.Client(ctx)
		if errors.Is(perr, ping.ErrDisconnected) && c.debug {
			fmt.Fprintln(c.stderr, "client DISCONNECT EVENT...")
		}
		if perr != nil {
			perr = fmt.Errorf("rping client failed: %w", perr)
		}
		return errors.Join(perr, conn.Close())
	}
	if _, err := ping.NewRping(c.rpingConfig()); err != nil {
		return err // check -S before listening
	}
	lo, err := c.rpingOptions(nil)
	if err != nil {
		return err
	}
	l, err := cm.Listen(ctx, hostPort(c.addr, c.port), lo)
	if err != nil {
		return err
	}
	defer l.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		req, err := l.AcceptRequest(ctx)
		if err != nil {
			return err
		}
		r, _ := ping.NewRping(c.rpingConfig())
		o, _ := c.rpingOptions(func(conn *cm.Conn) error { return r.Setup(newLink(conn, c), false) })
		conn, err := req.Accept(ctx, o)
		if err != nil {
			if c.persistent {
				fmt.Fprintln(c.stderr, "rdmaping: connect error:", err)
				continue
			}
			return fmt.Errorf("connect error: %w", err)
		}
		serve := func() error {
			err := r.Server(ctx)
			if c.debug {
				fmt.Fprintln(c.stderr, "server DISCONNECT EVENT...")
			}
			if err != nil {
				err = fmt.Errorf("rping server failed: %w", err)
			}
			return errors.Join(err, conn.Close())
		}
		if !c.persistent {
			return serve()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := serve(); err != nil {
				fmt.Fprintln(c.stderr, "rdmaping:", err)
			}
		}()
	}
}
