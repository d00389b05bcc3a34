// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/tools/ping"
	"github.com/rdmago/rdmago/uverbs"
)

// runUD is udaddy: -c -a ADDR plays `udaddy -s ADDR`, -s plays `udaddy`.
func runUD(ctx context.Context, c *config) error {
	count, size := c.count, c.size
	if count < 0 {
		count = ping.UDDefaultCount
	}
	u, err := ping.NewUD(ping.UDConfig{Count: count, Size: size, Out: c.stdout})
	if err != nil {
		return err
	}
	setup := func(conn *cm.Conn) error {
		mtu := 0
		if p, err := conn.Context().QueryPort(conn.Port()); err == nil {
			mtu = p.ActiveMTU.Bytes()
		}
		return u.Setup(newLink(conn, c), mtu)
	}
	src, err := sourceAddr(c.source)
	if err != nil {
		return err
	}
	o := &cm.Options{Source: src, SendDepth: u.Depth(), RecvDepth: u.Depth(), CQSize: 2 * u.Depth(),
		NoCompChannel: true, TOS: uint8(c.tos), Logf: c.logf(), Setup: setup}
	if c.client {
		fmt.Fprintln(c.stdout, "udaddy: starting client")
		fmt.Fprintln(c.stdout, "udaddy: connecting")
		conn, err := cm.DialUD(ctx, hostPort(c.addr, c.port), o)
		if err != nil {
			return fmt.Errorf("udaddy: %w", err)
		}
		err = u.Client(ctx, conn.AH(), conn.RemoteQPN(), conn.RemoteQKey())
		fmt.Fprintln(c.stdout, "test complete")
		return errors.Join(err, conn.Close())
	}
	fmt.Fprintln(c.stdout, "udaddy: starting server")
	l, err := cm.ListenUD(ctx, hostPort(c.addr, c.port), o)
	if err != nil {
		return err
	}
	defer l.Close()
	conn, err := l.Accept(ctx)
	if err != nil {
		return fmt.Errorf("udaddy: failing connection request: %w", err)
	}
	err = u.Server(ctx, conn.NewAH, cm.UDPQKey)
	fmt.Fprintln(c.stdout, "test complete")
	return errors.Join(err, conn.Close(), l.Close())
}

// runRdmaCS is librdmacm's rdma_server (-s) or rdma_client (-c): one
// 16-byte message each way with a one-deep QP, inline sends, every send
// signalled.
func runRdmaCS(ctx context.Context, c *config) error {
	var x ping.CS
	src, err := sourceAddr(c.source)
	if err != nil {
		return err
	}
	o := &cm.Options{Source: src, SendDepth: 1, RecvDepth: 1, MaxInline: ping.MsgCS, SigAll: true,
		Logf: c.logf(), Setup: func(conn *cm.Conn) error { return x.Setup(newLink(conn, c)) }}
	msg := []byte("rdmaping rdmacs!")
	if c.client {
		fmt.Fprintln(c.stdout, "rdma_client: start")
		conn, err := cm.Dial(ctx, hostPort(c.addr, c.port), o)
		if err != nil {
			fmt.Fprintln(c.stdout, "rdma_client: end -1")
			return err
		}
		err = errors.Join(x.Client(ctx, msg), conn.Close())
		fmt.Fprintf(c.stdout, "rdma_client: received %q\n", x.Got)
		fmt.Fprintf(c.stdout, "rdma_client: end %d\n", status(err))
		return err
	}
	fmt.Fprintln(c.stdout, "rdma_server: start")
	l, err := cm.Listen(ctx, hostPort(c.addr, c.port), o)
	if err != nil {
		return err
	}
	defer l.Close()
	conn, err := l.Accept(ctx)
	if err != nil {
		return err
	}
	err = errors.Join(x.Server(ctx, msg), conn.Close(), l.Close())
	fmt.Fprintf(c.stdout, "rdma_server: received %q\n", x.Got)
	fmt.Fprintf(c.stdout, "rdma_server: end %d\n", status(err))
	return err
}

func status(err error) int {
	if err != nil {
		return -1
	}
	return 0
}

func (c *config) demo() (*ping.Demo, error) {
	count := c.count
	if count < 0 {
		count = 10
	}
	return ping.NewDemo(ping.DemoConfig{Mode: c.mode, Count: count, Size: c.size, Out: c.stdout})
}

// runDemoCM runs a demo over an rdma_cm connection.
func runDemoCM(ctx context.Context, c *config) error {
	d, err := c.demo()
	if err != nil {
		return err
	}
	src, err := sourceAddr(c.source)
	if err != nil {
		return err
	}
	o := &cm.Options{Source: src, SendDepth: d.Depth(), RecvDepth: d.Depth(), InitiatorDepth: 1, ResponderResources: 1,
		TOS: uint8(c.tos), Logf: c.logf(), Setup: func(conn *cm.Conn) error { return d.Setup(newLink(conn, c)) }}
	if c.client {
		conn, err := cm.Dial(ctx, hostPort(c.addr, c.port), o)
		if err != nil {
			return err
		}
		return errors.Join(d.Client(ctx), conn.Close())
	}
	l, err := cm.Listen(ctx, hostPort(c.addr, c.port), o)
	if err != nil {
		return err
	}
	defer l.Close()
	conn, err := l.Accept(ctx)
	if err != nil {
		return err
	}
	err = d.Server(ctx)
	// Let the client finish reading the last acknowledgement and
	// disconnect first.
	if err == nil {
		select {
		case <-conn.Done():
		case <-ctx.Done():
		}
	}
	return errors.Join(err, conn.Close())
}

// demoAccess are the QP access rights the demos need (the CM sets them
// from the connection; the TCP path sets them itself).
const demoAccess = uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteAtomic
