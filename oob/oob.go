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
	"errors"
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

// SRQDests is how many addresses ibv_srq_pingpong exchanges each way
// whatever its -q: its MAX_QP, the unused ones all zero (rdma-core 19 and
// later).
const SRQDests = 256

// DefaultStepTimeout is Options.StepTimeout's default.
const DefaultStepTimeout = 5 * time.Second

// Options are an exchange's settings; the zero value, or a nil *Options,
// means every default.
type Options struct {
	// StepTimeout bounds each read of the exchange once the TCP
	// connection is up: the C programs answer at once, so a peer silent
	// this long is waiting for something else (ibv_srq_pingpong for its
	// other addresses, a one-QP program for our answer). 0 means
	// DefaultStepTimeout (5 s); ctx's deadline, if earlier, still applies.
	StepTimeout time.Duration
}

// ErrAddressCount is matched (errors.Is) by an exchange that failed
// because the peer exchanges another number of addresses: one side runs
// ibv_srq_pingpong's exchange (SRQDests addresses, ClientN and ServerN
// with n = SRQDests), the other a one-QP program's (one address).
var ErrAddressCount = errors.New("the peer exchanges another number of addresses")

// countError is an error that matches ErrAddressCount.
type countError struct{ error }

func (e countError) Is(target error) bool { return target == ErrAddressCount }
func (e countError) Unwrap() error        { return e.error }

// stepTimeout is opts' StepTimeout after its default, checked.
func stepTimeout(opts *Options) (time.Duration, error) {
	if opts == nil || opts.StepTimeout == 0 {
		return DefaultStepTimeout, nil
	}
	if opts.StepTimeout < 0 {
		return 0, fmt.Errorf("exchange: Options.StepTimeout %v: want 0 (%v) or more", opts.StepTimeout, DefaultStepTimeout)
	}
	return opts.StepTimeout, nil
}

// bindConn makes conn honour ctx: its deadline, and cancellation.
func bindConn(ctx context.Context, conn net.Conn) func() bool {
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	return context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
}

// readStep reads len(b) bytes, giving up step from now (or at ctx's
// deadline, if earlier).
func readStep(ctx context.Context, conn net.Conn, b []byte, step time.Duration) (int, error) {
	dl := time.Now().Add(step)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	if ctx.Err() == nil {
		conn.SetReadDeadline(dl)
	}
	return io.ReadFull(conn, b)
}

func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// marshalN is local padded with zero addresses to n messages.
func marshalN(local []uverbs.Dest, n int) []byte {
	b := make([]byte, 0, n*msgLen)
	for i := range n {
		var d uverbs.Dest
		if i < len(local) {
			d = local[i]
		}
		b = append(b, Marshal(d)...)
	}
	return b
}

// readDests reads n addresses from the peer (who is "the server" or "the
// client"), explaining a peer that sends fewer than n: it stopped, or
// closed the connection, after got of them.
func readDests(ctx context.Context, conn net.Conn, n int, who string, step time.Duration) ([]uverbs.Dest, error) {
	ds := make([]uverbs.Dest, n)
	msg := make([]byte, msgLen)
	for i := range ds {
		k, err := readStep(ctx, conn, msg, step)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("exchange: read remote address: %w", ctx.Err())
			}
			why, count := shortPeer(who, i, k, n, err, step)
			err = fmt.Errorf("exchange: read remote address %d of %d: %w%s", i+1, n, err, why)
			if count {
				err = countError{err}
			}
			return nil, err
		}
		if ds[i], err = Parse(msg); err != nil {
			return nil, fmt.Errorf("exchange: %s sent %q, not a pingpong address: is it an ibv_*_pingpong program? %w", who, msg, err)
		}
	}
	return ds, nil
}

// shortPeer explains why a peer sent got of the n addresses wanted, and
// whether it seems to exchange another number of them (ErrAddressCount).
func shortPeer(who string, got, partial, n int, err error, step time.Duration) (string, bool) {
	switch {
	case got == 0 && partial == 0 && timedOut(err) && n == 1 && who == "the server":
		return fmt.Sprintf(" (the server sent nothing for %v: it seems to wait for more addresses, as ibv_srq_pingpong does (it reads %d): exchange SRQDests addresses, n = %d)", step, SRQDests, SRQDests), true
	case got == 0 && partial == 0 && timedOut(err):
		return fmt.Sprintf(" (%s sent nothing for %v)", who, step), false
	case got == 0:
		return "", false
	case n == SRQDests:
		return fmt.Sprintf(" (%s sent %d address(es), not ibv_srq_pingpong's %d: it seems to run a one-QP pingpong (ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong): exchange one address, n = 1)", who, got, SRQDests), true
	}
	return fmt.Sprintf(" (%s sent %d address(es) of the %d wanted)", who, got, n), false
}

// Client is the client side of the exchange (pp_client_exch_dest): it
// connects to addr (host:port; ibv_rc_pingpong's default port is
// PingpongPort), sends local, receives the server's Dest and confirms. The
// server has connected its QP by then; connect yours after. It closes the
// TCP connection it opened before returning. opts may be nil (every
// default).
func Client(ctx context.Context, addr string, local uverbs.Dest, opts *Options) (uverbs.Dest, error) {
	ds, err := ClientN(ctx, addr, []uverbs.Dest{local}, 1, opts)
	if err != nil {
		return uverbs.Dest{}, err
	}
	return ds[0], nil
}

// ClientN is Client for n addresses each way, as ibv_srq_pingpong
// exchanges them (n = SRQDests, one per QP, the rest zero): local is padded
// with zero addresses to n, and all n of the server's are returned. Each
// read gives up after Options.StepTimeout with an error that says what the
// server seems to run (matching ErrAddressCount when it seems to exchange
// another number of addresses).
func ClientN(ctx context.Context, addr string, local []uverbs.Dest, n int, opts *Options) ([]uverbs.Dest, error) {
	step, err := stepTimeout(opts)
	if err != nil {
		return nil, err
	}
	var dl net.Dialer
	conn, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("exchange: %w", err)
	}
	defer conn.Close()
	defer bindConn(ctx, conn)()
	if _, err := conn.Write(marshalN(local, n)); err != nil {
		return nil, fmt.Errorf("exchange: send local address: %w", err)
	}
	remote, err := readDests(ctx, conn, n, "the server", step)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte(msgDone)); err != nil {
		return nil, fmt.Errorf("exchange: send done: %w", err)
	}
	return remote, nil
}

// Server is the server side (pp_server_exch_dest): it accepts one
// connection on ln, reads the client's Dest, calls connect with it — which
// should move the QP to RTS, as the C server does before answering — then
// sends local and waits for the client's confirmation. connect may be nil.
// The caller owns ln and must Close it; if ctx ends while Server waits in
// Accept, Server closes ln to get out. The accepted connection is closed
// before Server returns. opts may be nil (every default).
func Server(ctx context.Context, ln net.Listener, local uverbs.Dest, connect func(remote uverbs.Dest) error, opts *Options) (uverbs.Dest, error) {
	var c func([]uverbs.Dest) error
	if connect != nil {
		c = func(ds []uverbs.Dest) error { return connect(ds[0]) }
	}
	ds, err := ServerN(ctx, ln, []uverbs.Dest{local}, 1, c, opts)
	if err != nil {
		return uverbs.Dest{}, err
	}
	return ds[0], nil
}

// ServerN is Server for n addresses each way (see ClientN). Accept waits
// as long as ctx allows; every read after it gives up after
// Options.StepTimeout. A client that sends something else than "done"
// after its address(es) is reported with what it sent (matching
// ErrAddressCount when that is another address).
func ServerN(ctx context.Context, ln net.Listener, local []uverbs.Dest, n int, connect func(remote []uverbs.Dest) error, opts *Options) ([]uverbs.Dest, error) {
	step, err := stepTimeout(opts)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	conn, err := ln.Accept()
	stop()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("exchange: accept: %w", err)
	}
	defer conn.Close()
	defer bindConn(ctx, conn)()
	remote, err := readDests(ctx, conn, n, "the client", step)
	if err != nil {
		return nil, err
	}
	if connect != nil {
		if err := connect(remote); err != nil {
			return nil, fmt.Errorf("exchange: connect to the client's QP: %w", err)
		}
	}
	if _, err := conn.Write(marshalN(local, n)); err != nil {
		return nil, fmt.Errorf("exchange: send local address: %w", err)
	}
	done := make([]byte, len(msgDone))
	k, err := readStep(ctx, conn, done, step)
	if err != nil && k == 0 {
		return nil, fmt.Errorf("exchange: read done: %w", err)
	}
	if string(done[:k]) != msgDone {
		if _, perr := Parse(append(done[:k:k], readSome(conn, msgLen-k)...)); perr == nil {
			return nil, countError{fmt.Errorf("exchange: the client sent another address instead of \"done\": it seems to be ibv_srq_pingpong, which sends %d: exchange SRQDests addresses, n = %d", SRQDests, SRQDests)}
		}
		return nil, fmt.Errorf("exchange: the client sent %q instead of \"done\"", done[:k])
	}
	return remote, nil
}

// readSome reads what arrives of n more bytes within a short while.
func readSome(conn net.Conn, n int) []byte {
	conn.SetReadDeadline(time.Now().Add(time.Second))
	b := make([]byte, n)
	k, _ := io.ReadFull(conn, b)
	return b[:k]
}
