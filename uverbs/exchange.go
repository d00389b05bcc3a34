// Copyright 2026 The rdmago Authors.

package uverbs

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
)

// The out-of-band exchange of rdma-core's example programs (ibv_rc_pingpong,
// ibv_ud_pingpong, ...; libibverbs/examples): each side sends
// sprintf("%04x:%06x:%06x:%s", lid, qpn, psn, gid) as a 52-byte, NUL-padded
// message, the GID as 32 hex digits of its bytes in order. The client sends
// first; the server connects its QP, answers, and the client confirms with
// "done\0".
const (
	exchangeMsgLen = len("0000:000000:000000:00000000000000000000000000000000") + 1
	exchangeDone   = "done\x00"
	// PingpongPort is the TCP port the example programs use by default.
	PingpongPort = 18515
)

// MarshalPingpong encodes d in the example programs' wire format.
func (d Dest) MarshalPingpong() []byte {
	b := make([]byte, exchangeMsgLen)
	copy(b, fmt.Sprintf("%04x:%06x:%06x:%s", d.LID, d.QPN&0xffffff, d.PSN&0xffffff, hex.EncodeToString(d.GID[:])))
	return b
}

// ParsePingpong decodes a message in the example programs' format.
func ParsePingpong(b []byte) (Dest, error) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	f := strings.Split(string(b), ":")
	if len(f) != 4 || len(f[3]) != 32 {
		return Dest{}, fmt.Errorf("pingpong address %q: want LID:QPN:PSN:GID in hex", b)
	}
	var v [3]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i], 16, 32)
		if err != nil {
			return Dest{}, fmt.Errorf("pingpong address %q: %w", b, err)
		}
		v[i] = n
	}
	var d Dest
	if _, err := hex.Decode(d.GID[:], []byte(f[3])); err != nil {
		return Dest{}, fmt.Errorf("pingpong address %q: gid: %w", b, err)
	}
	if v[0] > 0xffff || v[1] > 0xffffff || v[2] > 0xffffff {
		return Dest{}, fmt.Errorf("pingpong address %q: field out of range", b)
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

// ExchangeClient is the client side of the example programs' exchange
// (pp_client_exch_dest): it connects to addr (host:port; ibv_rc_pingpong's
// default port is PingpongPort), sends local, receives the server's Dest and
// confirms. The server has connected its QP by then; connect yours after.
func ExchangeClient(ctx context.Context, addr string, local Dest) (Dest, error) {
	var dl net.Dialer
	conn, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Dest{}, fmt.Errorf("exchange: %w", err)
	}
	defer conn.Close()
	defer bindConn(ctx, conn)()
	if _, err := conn.Write(local.MarshalPingpong()); err != nil {
		return Dest{}, fmt.Errorf("exchange: send local address: %w", err)
	}
	msg := make([]byte, exchangeMsgLen)
	if _, err := io.ReadFull(conn, msg); err != nil {
		return Dest{}, fmt.Errorf("exchange: read remote address: %w", err)
	}
	remote, err := ParsePingpong(msg)
	if err != nil {
		return Dest{}, fmt.Errorf("exchange: %w", err)
	}
	if _, err := conn.Write([]byte(exchangeDone)); err != nil {
		return Dest{}, fmt.Errorf("exchange: send done: %w", err)
	}
	return remote, nil
}

// ExchangeServer is the server side (pp_server_exch_dest): it accepts one
// connection on ln, reads the client's Dest, calls connect with it — which
// should move the QP to RTS, as the C server does before answering — then
// sends local and waits for the client's confirmation. If ctx ends while it
// waits in Accept, it closes ln to get out.
func ExchangeServer(ctx context.Context, ln net.Listener, local Dest, connect func(remote Dest) error) (Dest, error) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	conn, err := ln.Accept()
	stop()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return Dest{}, fmt.Errorf("exchange: accept: %w", err)
	}
	defer conn.Close()
	defer bindConn(ctx, conn)()
	msg := make([]byte, exchangeMsgLen)
	if _, err := io.ReadFull(conn, msg); err != nil {
		return Dest{}, fmt.Errorf("exchange: read remote address: %w", err)
	}
	remote, err := ParsePingpong(msg)
	if err != nil {
		return Dest{}, fmt.Errorf("exchange: %w", err)
	}
	if connect != nil {
		if err := connect(remote); err != nil {
			return Dest{}, fmt.Errorf("exchange: connect to the client's QP: %w", err)
		}
	}
	if _, err := conn.Write(local.MarshalPingpong()); err != nil {
		return Dest{}, fmt.Errorf("exchange: send local address: %w", err)
	}
	done := make([]byte, len(exchangeDone))
	if _, err := io.ReadFull(conn, done); err != nil {
		return Dest{}, fmt.Errorf("exchange: read done: %w", err)
	}
	return remote, nil
}
