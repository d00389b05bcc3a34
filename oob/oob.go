// Copyright 2026 The rdmago Authors.

// Package oob is the out-of-band exchange of rdma-core's example programs
// (ibv_rc_pingpong, ibv_ud_pingpong, ...; libibverbs/examples): before two QPs
// can be connected, each side learns the other's LID, QPN, PSN and GID
// (a uverbs.Dest) over a plain TCP connection. It is the tutorials' classic
// exchange and interoperates with the C programs.
//
// Each side sends sprintf("%04x:%06x:%06x:%s", lid, qpn, psn, gid) as a
// 52-byte, NUL-padded message, the GID as 32 hex digits of its bytes in
// order. The client sends first; the server connects its QP, answers, and the
// client confirms with "done\0". Client and Server run one exchange; Marshal
// and Parse are the message format alone.
//
// No RDMA device or kernel feature is needed: the exchange is TCP only. The
// caller connects its QP with uverbs.QP.Connect.
package oob

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

const (
	msgLen  = len("0000:000000:000000:00000000000000000000000000000000") + 1
	msgDone = "done\x00"
	// PingpongPort is the TCP port the example programs use by default.
	PingpongPort = 18515
)

// Marshal encodes d as the example programs' 52-byte message (the
// sprintf/NUL padding of pp_client_exch_dest and pp_server_exch_dest).
func Marshal(d uverbs.Dest) []byte {
	b := make([]byte, msgLen)
	copy(b, fmt.Sprintf("%04x:%06x:%06x:%s", d.LID, d.QPN&0xffffff, d.PSN&0xffffff, hex.EncodeToString(d.GID[:])))
	return b
}

// Parse decodes a message in the example programs' format (the sscanf of
// pp_client_exch_dest and pp_server_exch_dest); it stops at the first NUL.
func Parse(b []byte) (uverbs.Dest, error) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	f := strings.Split(string(b), ":")
	if len(f) != 4 || len(f[3]) != 32 {
		return uverbs.Dest{}, fmt.Errorf("pingpong address %q: want LID:QPN:PSN:GID in hex", b)
	}
	var v [3]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i], 16, 32)
		if err != nil {
			return uverbs.Dest{}, fmt.Errorf("pingpong address %q: %w", b, err)
		}
		v[i] = n
	}
	var d uverbs.Dest
	if _, err := hex.Decode(d.GID[:], []byte(f[3])); err != nil {
		return uverbs.Dest{}, fmt.Errorf("pingpong address %q: gid: %w", b, err)
	}
	if v[0] > 0xffff || v[1] > 0xffffff || v[2] > 0xffffff {
		return uverbs.Dest{}, fmt.Errorf("pingpong address %q: field out of range", b)
	}
	d.LID, d.QPN, d.PSN = uint16(v[0]), uint32(v[1]), uint32(v[2])
	return d, nil
}

// bindConn makes conn honour ctx: its deadline, and cancellation.
func bindConn(ctx context.Context, conn net.Conn) func() bool {
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	return context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
}

// Client is the client side of the exchange (pp_client_exch_dest): it
// connects to addr (host:port; ibv_rc_pingpong's default port is
// PingpongPort), sends local, receives the server's Dest and confirms. The
// server has connected its QP by then; connect yours after. It closes the
// TCP connection it opened before returning.
func Client(ctx context.Context, addr string, local uverbs.Dest) (uverbs.Dest, error) {
	var dl net.Dialer
	conn, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return uverbs.Dest{}, fmt.Errorf("exchange: %w", err)
	}
	defer conn.Close()
	defer bindConn(ctx, conn)()
	if _, err := conn.Write(Marshal(local)); err != nil {
		return uverbs.Dest{}, fmt.Errorf("exchange: send local address: %w", err)
	}
	msg := make([]byte, msgLen)
	if _, err := io.ReadFull(conn, msg); err != nil {
		return uverbs.Dest{}, fmt.Errorf("exchange: read remote address: %w", err)
	}
	remote, err := Parse(msg)
	if err != nil {
		return uverbs.Dest{}, fmt.Errorf("exchange: %w", err)
	}
	if _, err := conn.Write([]byte(msgDone)); err != nil {
		return uverbs.Dest{}, fmt.Errorf("exchange: send done: %w", err)
	}
	return remote, nil
}

// Server is the server side (pp_server_exch_dest): it accepts one
// connection on ln, reads the client's Dest, calls connect with it — which
// should move the QP to RTS, as the C server does before answering — then
// sends local and waits for the client's confirmation. connect may be nil.
// The caller owns ln and must Close it; if ctx ends while Server waits in
// Accept, Server closes ln to get out. The accepted connection is closed
// before Server returns.
func Server(ctx context.Context, ln net.Listener, local uverbs.Dest, connect func(remote uverbs.Dest) error) (uverbs.Dest, error) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	conn, err := ln.Accept()
	stop()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return uverbs.Dest{}, fmt.Errorf("exchange: accept: %w", err)
	}
	defer conn.Close()
	defer bindConn(ctx, conn)()
	msg := make([]byte, msgLen)
	if _, err := io.ReadFull(conn, msg); err != nil {
		return uverbs.Dest{}, fmt.Errorf("exchange: read remote address: %w", err)
	}
	remote, err := Parse(msg)
	if err != nil {
		return uverbs.Dest{}, fmt.Errorf("exchange: %w", err)
	}
	if connect != nil {
		if err := connect(remote); err != nil {
			return uverbs.Dest{}, fmt.Errorf("exchange: connect to the client's QP: %w", err)
		}
	}
	if _, err := conn.Write(Marshal(local)); err != nil {
		return uverbs.Dest{}, fmt.Errorf("exchange: send local address: %w", err)
	}
	done := make([]byte, len(msgDone))
	if _, err := io.ReadFull(conn, done); err != nil {
		return uverbs.Dest{}, fmt.Errorf("exchange: read done: %w", err)
	}
	return remote, nil
}
