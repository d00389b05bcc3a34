// Copyright 2026 The rdmago Authors.

// Package ptwire is perftest's out-of-band TCP exchange (its "Ethernet" data
// exchange method, perftest_communication.c), as perftest 6.06 speaks it
// (Debian 12's perftest 4.5-0.17): the version strings, the page and cache
// line sizes, the MTU, the QP addresses as text ("keys"), the bandwidth
// reports and the closing "done". It lets rdmaperf meet ib_write_bw and its
// siblings on either side.
//
// Every exchange is symmetric: the client writes, then reads; the server
// reads, then writes (ctx_hand_shake, ctx_xchg_data_ethernet). Each read has a
// deadline, and what a peer sent that is not perftest's is quoted in the
// error, with a guess at what the peer is.
//
// With perftest's -R (rdma_cm) the same exchange runs over an RC connection
// of its own instead (ctx_xchg_data_rdma, rdma_read_keys, rdma_write_keys):
// each message is one SEND of the same bytes, except that the keys are the
// binary struct pingpong_dest, big-endian (56 bytes), and the closing has no
// "done". NewMsgConn takes that connection as a Messenger.
package ptwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Version is the perftest version this side announces: the lab's (Debian
// 12's ib_write_bw --version). The peer checks it is at least 5.70, and from
// it picks the sizes of later fields (5.31: two-byte MTU, 5.32: page and
// cache line sizes, 5.33: 64-bit iteration counts), all of which 6.06 has.
const Version = "6.06"

// MinVersion is the oldest peer whose exchange this package speaks
// (perftest's own check_version_compatibility).
const MinVersion = 5.70

const (
	versionLen = 16  // MAX_VERSION
	keysLen    = 108 // KEY_MSG_SIZE_GID
	mtuLen     = 2   // "%d" of enum ibv_mtu and its NUL
	doneLen    = 5   // "done" and its NUL
	// DestLen is sizeof(struct pingpong_dest) on a 64-bit host: the keys
	// of the rdma_cm exchange, and the size of the one receive perftest
	// posts on that connection (no message may be longer).
	DestLen = 56
)

// Dest is struct pingpong_dest as the keys carry it: one QP's address and
// the buffer the peer may access.
type Dest struct {
	LID      uint16
	OutReads int // the QP's RDMA READ / atomic depth
	QPN      uint32
	PSN      uint32
	RKey     uint32
	VAddr    uint64
	GID      [16]byte
	SRQN     uint32
}

// MarshalText is KEY_PRINT_FMT_GID: fields in hex, colon-terminated, in a
// NUL-padded 108-byte message.
func (d Dest) MarshalText() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%04x:%04x:%06x:%06x:%08x:%016x:", d.LID, d.OutReads, d.QPN, d.PSN, d.RKey, d.VAddr)
	for _, g := range d.GID {
		fmt.Fprintf(&b, "%02x:", g)
	}
	fmt.Fprintf(&b, "%08x:", d.SRQN)
	out := make([]byte, keysLen)
	copy(out, b.String())
	return out
}

// ParseDest parses a keys message (ethernet_read_keys with a GID).
func ParseDest(msg []byte) (Dest, error) {
	var d Dest
	s := string(msg)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	f := strings.Split(s, ":")
	// 6 fields, 16 GID bytes, the SRQ number, and the empty tail after the
	// last colon.
	if len(f) != 24 || f[23] != "" {
		return d, fmt.Errorf("keys message %s: want 23 colon-terminated hex fields (LID:OUT_READS:QPN:PSN:RKEY:VADDR:16 GID bytes:SRQN:)", Quote(msg))
	}
	widths := []int{16, 16, 24, 24, 32, 64}
	var v [6]uint64
	for i, w := range widths {
		x, err := strconv.ParseUint(f[i], 16, w)
		if err != nil {
			return d, fmt.Errorf("keys message %s: field %d %q: %v", Quote(msg), i+1, f[i], err)
		}
		v[i] = x
	}
	d.LID, d.OutReads, d.QPN, d.PSN, d.RKey, d.VAddr = uint16(v[0]), int(v[1]), uint32(v[2]), uint32(v[3]), uint32(v[4]), v[5]
	for i := range d.GID {
		x, err := strconv.ParseUint(f[6+i], 16, 8)
		if err != nil {
			return d, fmt.Errorf("keys message %s: GID byte %d %q: %v", Quote(msg), i, f[6+i], err)
		}
		d.GID[i] = byte(x)
	}
	x, err := strconv.ParseUint(f[22], 16, 32)
	if err != nil {
		return d, fmt.Errorf("keys message %s: SRQN %q: %v", Quote(msg), f[22], err)
	}
	d.SRQN = uint32(x)
	return d, nil
}

// MarshalBinary is struct pingpong_dest as rdma_write_keys sends it: each
// field big-endian in the C layout (lid, out_reads, qpn, psn, rkey, 4 bytes
// of padding, vaddr, gid, srqn, gid_index).
func (d Dest) MarshalBinary() []byte {
	b := make([]byte, DestLen)
	be := binary.BigEndian
	be.PutUint32(b[0:], uint32(d.LID))
	be.PutUint32(b[4:], uint32(d.OutReads))
	be.PutUint32(b[8:], d.QPN)
	be.PutUint32(b[12:], d.PSN)
	be.PutUint32(b[16:], d.RKey)
	be.PutUint64(b[24:], d.VAddr)
	copy(b[32:48], d.GID[:])
	be.PutUint32(b[48:], d.SRQN)
	return b
}

// ParseDestBinary parses the keys of the rdma_cm exchange (rdma_read_keys,
// which reads neither srqn nor gid_index).
func ParseDestBinary(msg []byte) (Dest, error) {
	if len(msg) != DestLen {
		return Dest{}, fmt.Errorf("keys message of %d bytes %s: want perftest's %d-byte struct pingpong_dest", len(msg), Quote(msg), DestLen)
	}
	be := binary.BigEndian
	d := Dest{
		LID: uint16(be.Uint32(msg[0:])), OutReads: int(int32(be.Uint32(msg[4:]))),
		QPN: be.Uint32(msg[8:]), PSN: be.Uint32(msg[12:]), RKey: be.Uint32(msg[16:]),
		VAddr: be.Uint64(msg[24:]), SRQN: be.Uint32(msg[48:]),
	}
	copy(d.GID[:], msg[32:48])
	return d, nil
}

// V4Mapped reports an IPv4-mapped GID (ipv6_addr_v4mapped): perftest refuses
// to pair one with a GID that is not ("Found Incompatibility issue with GID
// types").
func V4Mapped(g [16]byte) bool {
	return bytes.Equal(g[:12], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
}

// BWReport is struct bw_report_data as xchg_bw_reports sends it (without the
// per-port figures): the client's result, which perftest's server prints.
type BWReport struct {
	Size    uint64
	Iters   uint64
	Peak    float64 // MB/sec (or Gb/sec with --report_gbits)
	Average float64
	MsgRate float64 // Mpps
}

// Quote shows bytes received from the peer: trailing NULs dropped, the rest
// escaped.
func Quote(b []byte) string {
	return strconv.QuoteToASCII(string(bytes.TrimRight(b, "\x00")))
}

// Messenger carries perftest's exchange as whole messages: with -R, SENDs on
// an RC connection of their own. ReadMsg returns the next message; a wait
// longer than its timeout (0: none) fails with an error matching
// context.DeadlineExceeded or os.ErrDeadlineExceeded.
type Messenger interface {
	WriteMsg(b []byte, timeout time.Duration) error
	ReadMsg(timeout time.Duration) ([]byte, error)
	Close() error
}

// Conn is one side of the exchange on a TCP connection or, with -R, on a
// Messenger.
type Conn struct {
	c      net.Conn
	m      Messenger // the rdma_cm exchange, instead of c
	client bool
	// Wait bounds each read that waits for the peer's program to reach
	// the same step (the run in between included). Zero: no bound.
	Wait time.Duration
	// PeerVersion is the peer's version string, once Versions ran.
	PeerVersion string
	step        string
}

// NewConn wraps c; client says which side this is (the client writes first).
func NewConn(c net.Conn, client bool, wait time.Duration) *Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return &Conn{c: c, client: client, Wait: wait}
}

// NewMsgConn is the rdma_cm exchange on m; client says which side this is.
func NewMsgConn(m Messenger, client bool, wait time.Duration) *Conn {
	return &Conn{m: m, client: client, Wait: wait}
}

// RDMACM reports the rdma_cm exchange.
func (c *Conn) RDMACM() bool { return c.m != nil }

// Close closes the connection.
func (c *Conn) Close() error {
	if c.m != nil {
		return c.m.Close()
	}
	return c.c.Close()
}

// xchg sends mine and returns the peer's n bytes, in the side's order.
func (c *Conn) xchg(step string, mine []byte, n int) ([]byte, error) {
	c.step = step
	if c.client {
		if err := c.write(mine); err != nil {
			return nil, err
		}
		return c.read(n)
	}
	b, err := c.read(n)
	if err != nil {
		return nil, err
	}
	return b, c.write(mine)
}

func (c *Conn) write(b []byte) error {
	if c.m != nil {
		if err := c.m.WriteMsg(b, c.Wait); err != nil {
			return fmt.Errorf("perftest exchange (rdma_cm), %s: send: %w", c.step, err)
		}
		return nil
	}
	if c.Wait > 0 {
		c.c.SetWriteDeadline(time.Now().Add(c.Wait))
	}
	if _, err := c.c.Write(b); err != nil {
		return fmt.Errorf("perftest exchange, %s: send: %w", c.step, err)
	}
	return nil
}

// ErrPeerClosed is a peer that ended the exchange's connection where
// perftest expects another message: end of stream (TCP), or a receive
// flushed by the disconnection (rdma_cm, where the Messenger says so by
// wrapping it).
var ErrPeerClosed = errors.New("the peer closed the connection: it failed or runs another test (see its own output)")

// ErrTimeout is a peer that did not answer within Conn.Wait.
var ErrTimeout = errors.New("the peer did not answer in time")

func (c *Conn) read(n int) ([]byte, error) {
	if c.m != nil {
		return c.readMsg(n)
	}
	if c.Wait > 0 {
		c.c.SetReadDeadline(time.Now().Add(c.Wait))
	}
	b := make([]byte, n)
	got, err := io.ReadFull(c.c, b)
	if err == nil {
		return b, nil
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		err = fmt.Errorf("%w (%v): is it running the same test with the same -s, -n and -q?", ErrTimeout, c.Wait)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		err = ErrPeerClosed
	}
	if got > 0 {
		return nil, fmt.Errorf("perftest exchange, %s: after %d of %d bytes %s: %w", c.step, got, n, Quote(b[:got]), err)
	}
	return nil, fmt.Errorf("perftest exchange, %s: %w", c.step, err)
}

// readMsg reads the peer's next message, which must be n bytes long.
func (c *Conn) readMsg(n int) ([]byte, error) {
	b, err := c.m.ReadMsg(c.Wait)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("%w (%v): is it running the same test with the same -s, -n and -q?", ErrTimeout, c.Wait)
		}
		return nil, fmt.Errorf("perftest exchange (rdma_cm), %s: %w", c.step, err)
	}
	if len(b) != n {
		return nil, fmt.Errorf("perftest exchange (rdma_cm), %s: the peer sent %d bytes %s where perftest sends %d: %s", c.step, len(b), Quote(b), n, guess(b))
	}
	return b, nil
}

// Versions is exchange_versions: both sides' version strings, checked as
// check_version_compatibility does. A peer that is not perftest usually
// shows here, and the error says what it sent.
func (c *Conn) Versions() (string, error) {
	mine := make([]byte, versionLen)
	copy(mine, Version)
	b, err := c.xchg("versions", mine, versionLen)
	if err != nil {
		return "", err
	}
	v, err := ParseVersion(b)
	if err != nil {
		return "", err
	}
	c.PeerVersion = v
	return v, nil
}

// ParseVersion checks a peer's 16-byte version message.
func ParseVersion(b []byte) (string, error) {
	s := string(b)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || s == "" {
		return "", fmt.Errorf("perftest exchange: the peer sent %s where perftest sends its version (%q): %s", Quote(b), Version, guess(b))
	}
	if f < MinVersion {
		return "", fmt.Errorf("the peer is perftest %s; rdmaperf speaks the exchange of perftest %.2f and later (%s)", s, MinVersion, Version)
	}
	return s, nil
}

// guess names what a peer that sent b instead of a version seems to be.
func guess(b []byte) string {
	switch {
	case len(b) >= 5 && b[0] == 0 && bytes.HasPrefix(b[4:], []byte(`{"`)):
		return "that is rdmaperf's own protocol: drop --perftest on this side, or add it on the other"
	case bytes.HasPrefix(b, []byte(`{"`)):
		return "that is rdmaperf's own protocol (-R): drop --perftest on this side, or add it on the other"
	case bytes.Count(b, []byte(":")) >= 2:
		return "that looks like a QP address (ibv_*_pingpong's exchange?), not perftest"
	}
	return "the peer is not perftest"
}

// SysData is check_sys_data: each side's page size (its cycle buffer) and
// cache line size, big-endian; both take the larger.
func (c *Conn) SysData(cycleBuffer, cacheLine int) (int, int, error) {
	var m [4]byte
	binary.BigEndian.PutUint32(m[:], uint32(cycleBuffer))
	b, err := c.xchg("page size", m[:], 4)
	if err != nil {
		return 0, 0, err
	}
	rc := int(int32(binary.BigEndian.Uint32(b)))
	binary.BigEndian.PutUint32(m[:], uint32(cacheLine))
	if b, err = c.xchg("cache line size", m[:], 4); err != nil {
		return 0, 0, err
	}
	rl := int(int32(binary.BigEndian.Uint32(b)))
	if rc <= 0 || rc > 1<<30 || rl <= 0 || rl > 1<<16 {
		return 0, 0, fmt.Errorf("perftest exchange: the peer's page size %d / cache line %d make no sense: is it perftest %s?", rc, rl, c.PeerVersion)
	}
	return max(rc, cycleBuffer), max(rl, cacheLine), nil
}

// MTU is check_mtu's exchange: each side's enum ibv_mtu (1: 256 .. 5: 4096)
// as a decimal string; both take the smaller.
func (c *Conn) MTU(mine int) (int, error) {
	m := make([]byte, mtuLen)
	copy(m, strconv.Itoa(mine))
	b, err := c.xchg("MTU", m, mtuLen)
	if err != nil {
		return 0, err
	}
	s := strings.TrimRight(string(b), "\x00")
	r, err := strconv.Atoi(s)
	if err != nil || r < 1 || r > 5 {
		return 0, fmt.Errorf("perftest exchange: the peer sent %s for its MTU (want 1..5, enum ibv_mtu)", Quote(b))
	}
	return min(r, mine), nil
}

// Keys is ctx_hand_shake: both sides' QP addresses. perftest repeats it as a
// barrier at each step of a test, always with the same content.
func (c *Conn) Keys(step string, mine Dest) (Dest, error) {
	msg, n, parse := mine.MarshalText(), keysLen, ParseDest
	if c.m != nil {
		msg, n, parse = mine.MarshalBinary(), DestLen, ParseDestBinary
	}
	b, err := c.xchg(step, msg, n)
	if err != nil {
		return Dest{}, err
	}
	d, err := parse(b)
	if err != nil {
		return Dest{}, fmt.Errorf("perftest exchange, %s: %w", step, err)
	}
	return d, nil
}

// Reports is xchg_bw_reports (for a peer of version 5.33 or later):
// size, iterations, peak and average bandwidth and message rate, each
// exchanged on its own, 64-bit big-endian.
func (c *Conn) Reports(mine BWReport) (BWReport, error) {
	var r BWReport
	vals := []uint64{mine.Size, mine.Iters, math.Float64bits(mine.Peak), math.Float64bits(mine.Average), math.Float64bits(mine.MsgRate)}
	var got [5]uint64
	for i, v := range vals {
		var m [8]byte
		binary.BigEndian.PutUint64(m[:], v)
		b, err := c.xchg("bandwidth report", m[:], 8)
		if err != nil {
			return r, err
		}
		got[i] = binary.BigEndian.Uint64(b)
	}
	r = BWReport{Size: got[0], Iters: got[1], Peak: math.Float64frombits(got[2]), Average: math.Float64frombits(got[3]), MsgRate: math.Float64frombits(got[4])}
	return r, nil
}

// Done is ctx_close_connection: a last keys barrier, then each side sends
// "done" and closes. perftest never reads the peer's "done" and may close
// with it unread, which resets the connection: the peer's "done" is checked
// when it arrives, a reset after the barrier is the peer's close. The
// rdma_cm exchange ends with the barrier.
func (c *Conn) Done(mine Dest) error {
	if _, err := c.Keys("closing", mine); err != nil || c.m != nil {
		return err
	}
	c.step = "closing"
	c.write([]byte("done\x00")) // the peer may have closed already
	b, err := c.read(doneLen)
	if err != nil {
		if errors.Is(err, ErrTimeout) {
			return err
		}
		return nil
	}
	if string(b) != "done\x00" {
		return fmt.Errorf("perftest exchange, closing: the peer sent %s, want \"done\"", Quote(b))
	}
	return nil
}
