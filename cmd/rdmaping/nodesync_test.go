// Copyright 2026 The rdmago Authors.

//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With two nodes each node runs the whole test binary: node 0 the
// servers, node 1 the clients. Nothing ties node 1's client to node 0's
// server of the same subtest but the server's port, and a multicast
// sender has not even that: a node that fails or runs a subtest faster
// gets ahead, and every later subtest meets a server that is not there
// yet, or gone. So before each pair the nodes meet over TCP on meetPort:
// node 1 names its subtest, node 0 answers once it is at the same one
// ("here"), then says when its server is ready ("ready", or "failed:
// why").

// meetPort is node 0's TCP port for the meeting.
const meetPort = "7490"

// meetWait bounds a node's wait for the other at a subtest: longer than
// the other node can spend in the subtest before (pair's 90 s).
const meetWait = 150 * time.Second

// link is one subtest's connection between the two nodes.
type link struct {
	conn  net.Conn
	lines chan string // node 1: node 0's lines after "here"; closed at EOF
}

// meet returns once the other node is at the same subtest, t.Name().
// It fails t when the other node does not come within meetWait or is at
// another subtest.
func meet(t *testing.T, r role) *link {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), meetWait)
	defer cancel()
	name := t.Name()
	if r.server {
		ln, err := net.Listen("tcp", net.JoinHostPort(r.bind, meetPort))
		if err != nil {
			t.Fatalf("node 0 at %s: listen for node 1: %v", name, err)
		}
		defer ln.Close()
		stop := context.AfterFunc(ctx, func() { ln.Close() })
		defer stop()
		for {
			c, err := ln.Accept()
			if err != nil {
				t.Fatalf("node 0 at %s: node 1 did not come within %v: %v", name, meetWait, err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			theirs, err := bufio.NewReader(c).ReadString('\n')
			theirs = strings.TrimSuffix(theirs, "\n")
			if err == nil && theirs == name {
				_, err = fmt.Fprintln(c, "here")
			} else if err == nil {
				fmt.Fprintf(c, "at %s\n", name)
				t.Logf("node 1 came at %s, not here; waiting for it", theirs)
				err = errors.New("not here")
			}
			if err != nil {
				c.Close()
				continue
			}
			c.SetDeadline(time.Time{})
			return &link{conn: c}
		}
	}
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(r.addr, meetPort))
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("node 1 at %s: node 0 did not come within %v: %v", name, meetWait, err)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("node 1 at %s: reach node 0: %v", name, err)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		l := &link{conn: c, lines: make(chan string, 4)}
		fmt.Fprintln(c, name)
		c.SetReadDeadline(time.Now().Add(meetWait))
		br := bufio.NewReader(c)
		first, err := br.ReadString('\n')
		first = strings.TrimSuffix(first, "\n")
		switch {
		case err != nil:
			// Node 0 closed the listener of the subtest before; try again.
			c.Close()
			time.Sleep(100 * time.Millisecond)
			continue
		case first != "here":
			c.Close()
			t.Fatalf("node 1 at %s: node 0 is %s", name, first)
		}
		c.SetReadDeadline(time.Time{})
		go l.read(br)
		return l
	}
}

// read passes node 0's lines on until the end.
func (l *link) read(br *bufio.Reader) {
	defer close(l.lines)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		l.lines <- strings.TrimSuffix(line, "\n")
	}
}

// sendReady tells node 1 that the server is ready, or why it is not.
func (l *link) sendReady(err error) {
	if err != nil {
		fmt.Fprintf(l.conn, "failed: %v\n", err)
		return
	}
	fmt.Fprintln(l.conn, "ready")
}

// awaitReady waits for node 0's server to be ready.
func (l *link) awaitReady() error {
	select {
	case line, ok := <-l.lines:
		switch {
		case !ok:
			return errors.New("node 0 left before its server was ready")
		case line != "ready":
			return fmt.Errorf("node 0's server %s", line)
		}
		return nil
	case <-time.After(readyWait + 5*time.Second):
		return errors.New("node 0's server was not ready in time")
	}
}

func (l *link) close() { l.conn.Close() }
