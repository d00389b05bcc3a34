// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/uverbs"
	"golang.org/x/net/nettest"
)

// TestConnDataGolden: rs_conn_data's bytes as librdmacm lays them out
// (big-endian fields, reserved bytes zero) for a little-endian host.
func TestConnDataGolden(t *testing.T) {
	d := connData{Version: 1, Flags: connFlagIOMap, Credits: 384, IOMapSize: 0,
		TargetSGL: rsSGE{Addr: 0x7f0011223340, Key: 0x1234, Length: 2},
		DataBuf:   rsSGE{Addr: 0x7f0055667700, Key: 0xabcd, Length: 65536}}
	var b [connDataLen]byte
	d.marshal(b[:])
	want := "01020180" + "00000000" +
		"00007f0011223340" + "00001234" + "00000002" +
		"00007f0055667700" + "0000abcd" + "00010000"
	if got := hex.EncodeToString(b[:]); got != want {
		t.Fatalf("marshal:\n got %s\nwant %s", got, want)
	}
	got, err := parseConnData(append(b[:], make([]byte, 16)...))
	if err != nil || got != d {
		t.Fatalf("parse: %+v, %v; want %+v", got, err, d)
	}
}

func TestConnDataRefused(t *testing.T) {
	good := func() []byte {
		var b [56]byte
		d := connData{Version: 1, Credits: 16, TargetSGL: rsSGE{Addr: 1, Key: 2, Length: 2}, DataBuf: rsSGE{Addr: 3, Key: 4, Length: 4096}}
		d.marshal(b[:])
		return b[:]
	}
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"short", func(b []byte) []byte { return b[:39] }, "39 bytes"},
		{"empty", func(b []byte) []byte { return nil }, "not an rsocket"},
		{"version 0", func(b []byte) []byte { b[0] = 0; return b }, "version 0"},
		{"version 2", func(b []byte) []byte { b[0] = 2; return b }, "version 2"},
		{"zero credits", func(b []byte) []byte { b[2], b[3] = 0, 0; return b }, "0 receive credits"},
		{"no target SGL", func(b []byte) []byte { binary.BigEndian.PutUint32(b[20:], 0); return b }, "0 entries"},
		{"huge target SGL", func(b []byte) []byte { binary.BigEndian.PutUint32(b[20:], 1<<20); return b }, "1048576 entries"},
		{"empty buffer", func(b []byte) []byte { binary.BigEndian.PutUint32(b[36:], 0); return b }, "empty first receive buffer"},
		{"giant buffer", func(b []byte) []byte { binary.BigEndian.PutUint32(b[36:], 1<<31); return b }, "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConnData(tc.edit(good()))
			if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrProtocol saying %q", err, tc.want)
			}
		})
	}
	if _, err := parseConnData(good()); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseConnData: any private data parses or is refused with
// ErrProtocol; what parses re-encodes to the same fields.
func FuzzParseConnData(f *testing.F) {
	var b [56]byte
	(&connData{Version: 1, Credits: 384, TargetSGL: rsSGE{1, 2, 2}, DataBuf: rsSGE{3, 4, 65536}}).marshal(b[:])
	f.Add(b[:])
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 40))
	f.Fuzz(func(t *testing.T, p []byte) {
		d, err := parseConnData(p)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not match ErrProtocol", err)
			}
			return
		}
		var out [connDataLen]byte
		d.marshal(out[:])
		d2, err := parseConnData(out[:])
		if err != nil || d2 != d {
			t.Fatalf("re-encoded %+v parsed as %+v, %v", d, d2, err)
		}
	})
}

func TestMsgEncoding(t *testing.T) {
	for _, tc := range []struct {
		op, data uint32
		imm      uint32
	}{
		{opData, 65536, 0x00010000},
		{opSGL, 768, 0x80000300},
		{opCtrl, ctrlDisconnect, 0xe0000000},
		{opCtrl, ctrlShutdown, 0xe0000002},
		{opIOMapSG, 5, 0xc0000005},
	} {
		if got := msgSet(tc.op, tc.data); got != tc.imm {
			t.Errorf("msgSet(%d, %d) = %#x, want %#x", tc.op, tc.data, got, tc.imm)
		}
		if msgOp(tc.imm) != tc.op || msgData(tc.imm) != tc.data {
			t.Errorf("%#x decodes as op %d data %d", tc.imm, msgOp(tc.imm), msgData(tc.imm))
		}
	}
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestFakeStream sends 4 MiB each way at once through small rings and
// queues (so credits, buffer updates and ring wrap-around all happen many
// times) and checks every byte.
func TestFakeStream(t *testing.T) {
	for _, o := range []Options{
		{},
		{SendBuffer: 4096, RecvBuffer: 4096, SendQueue: 16, RecvQueue: 16, Inline: NoInline},
		{SendBuffer: 6000, RecvBuffer: 5000, SendQueue: 17, RecvQueue: 20, Inline: 8},
		{PollTime: 50 * time.Microsecond},
	} {
		a, b, _ := fakePair(t, o, o)
		streamBothWays(t, a, b, 4<<20)
	}
}

func streamBothWays(t *testing.T, a, b net.Conn, n int) {
	t.Helper()
	var wg sync.WaitGroup
	one := func(w, r net.Conn, seed uint64) {
		defer wg.Done()
		src := randomBytes(n, seed)
		werr := make(chan error, 1)
		go func() {
			// Odd write sizes, to cross every boundary.
			var err error
			for off := 0; off < len(src) && err == nil; {
				k := min(len(src)-off, 1+int(seed*7919+uint64(off))%70000)
				_, err = w.Write(src[off : off+k])
				off += k
			}
			werr <- err
		}()
		got := make([]byte, 0, n)
		buf := make([]byte, 3001)
		for len(got) < n {
			k, err := r.Read(buf)
			got = append(got, buf[:k]...)
			if err != nil {
				t.Errorf("read after %d bytes: %v", len(got), err)
				return
			}
		}
		if err := <-werr; err != nil {
			t.Errorf("write: %v", err)
		}
		if sha256.Sum256(got) != sha256.Sum256(src) {
			t.Errorf("%d bytes arrived corrupted", n)
		}
	}
	wg.Add(2)
	go one(a, b, 1)
	go one(b, a, 2)
	wg.Wait()
}

// TestFakeNettest runs x/net/nettest's net.Conn conformance suite over a
// pair on the in-memory wire (the lab runs it over real RDMA).
func TestFakeNettest(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		a, b, _ := fakePair(t, Options{}, Options{})
		return a, b, func() { a.Close(); b.Close() }, nil
	})
}

// TestFakeHalfClose: CloseWrite on either side gives the other io.EOF
// after the data, while the other direction keeps working.
func TestFakeHalfClose(t *testing.T) {
	for _, first := range []string{"a", "b"} {
		t.Run(first, func(t *testing.T) {
			a, b, _ := fakePair(t, Options{}, Options{})
			if first == "b" {
				a, b = b, a
			}
			if _, err := a.Write([]byte("last words")); err != nil {
				t.Fatal(err)
			}
			if err := a.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(b)
			if err != nil || string(got) != "last words" {
				t.Fatalf("ReadAll = %q, %v; want the data then EOF", got, err)
			}
			if _, err := a.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("write after CloseWrite: %v, want EPIPE", err)
			}
			// The other direction is still open.
			reply := randomBytes(300000, 9)
			go func() { b.Write(reply); b.CloseWrite() }()
			got, err = io.ReadAll(a)
			if err != nil || !bytes.Equal(got, reply) {
				t.Fatalf("reply: %d bytes, %v; want %d bytes then EOF", len(got), err, len(reply))
			}
			for _, c := range []*Conn{a, b} {
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestFakeCloseAfterBothShut: both ends CloseWrite, and one reads the
// other's end of stream and Closes while its own SHUTDOWN is still on the
// wire. Close must wait for it: disconnecting first flushed it, and the
// other end's Read said "the peer disconnected without closing the
// stream" instead of io.EOF (seen in the lab on 6.12 in TestLabStream).
func TestFakeCloseAfterBothShut(t *testing.T) {
	a, b, w := fakePair(t, Options{}, Options{})
	ea := w.ends[0] // a's end
	ea.setHold(true)
	if _, err := a.Write([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	if err := a.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if err := b.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(a); err != nil || len(got) != 0 {
		t.Fatalf("a: ReadAll = %q, %v; want EOF", got, err)
	}
	// a's data and SHUTDOWN arrive only once a's Close is waiting.
	ea.onWait = func() { go ea.setHold(false) }
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	got, err := io.ReadAll(b)
	if err != nil || string(got) != "last words" {
		t.Fatalf("b: ReadAll = %q, %v; want the data then EOF", got, err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("a.Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a.Close did not return")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFakeCloseRead: after CloseRead, Read gives io.EOF at once and what
// the peer still sends is dropped without stalling it.
func TestFakeCloseRead(t *testing.T) {
	a, b, _ := fakePair(t, Options{RecvBuffer: 8192}, Options{})
	if err := a.CloseRead(); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("read after CloseRead: %d, %v", n, err)
	}
	if _, err := b.Write(make([]byte, 1<<20)); err != nil {
		t.Fatalf("the peer's write stalled or failed: %v", err)
	}
	if _, err := a.Write([]byte("still writing")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "still writing" {
		t.Fatalf("%q, %v", buf[:n], err)
	}
}

// TestFakeClose: the peer's Close gives io.EOF after the data and makes
// writes fail; Close unblocks a local Read and Write at once.
func TestFakeClose(t *testing.T) {
	a, b, _ := fakePair(t, Options{}, Options{})
	a.Write([]byte("bye"))
	a.Close()
	if got, err := io.ReadAll(b); err != nil || string(got) != "bye" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write to a closed peer: %v", err)
	}
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}

	c, d, _ := fakePair(t, Options{}, Options{})
	errs := make(chan error, 2)
	go func() { _, err := c.Read(make([]byte, 10)); errs <- err }()
	go func() {
		var err error
		for err == nil {
			_, err = c.Write(make([]byte, 1<<20)) // d never reads: blocks
		}
		errs <- err
	}()
	time.Sleep(50 * time.Millisecond)
	c.Close()
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("blocked call returned %v, want net.ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not unblock Read and Write")
		}
	}
	_ = d
}

// TestFakePeerVanishes: a peer whose connection just ends (its process
// died; the CM disconnects) fails the other end's Read and Write with
// ECONNRESET, not io.EOF. (Read's loop here; io.Copy from a Conn uses
// WriteTo: TestFakeWriteToErrors.)
func TestFakePeerVanishes(t *testing.T) {
	a, b, w := fakePair(t, Options{}, Options{})
	errs := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, struct{ io.Reader }{b})
		errs <- err
	}()
	a.Write(make([]byte, 100000))
	w.ends[0].disconnect() // a's process died: no DISCONNECT message
	select {
	case err := <-errs:
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read: %v, want ECONNRESET", err)
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "read" {
			t.Fatalf("read error %T %v is not a *net.OpError for read", err, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read did not fail")
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("write: %v, want ECONNRESET", err)
	}
}

// TestFakeHostile: a peer that breaks the protocol gets the connection
// closed with an error matching ErrProtocol, never a panic.
func TestFakeHostile(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*connData)
		act  func(c *Conn, p *rawPeer)
		want string
	}{
		{"data beyond credits", nil, func(c *Conn, p *rawPeer) {
			for range c.cfg.rqSize + 1 {
				p.sendData(c, 0, nil, 0)
			}
		}, "beyond the 384 credits"},
		{"oversized data", nil, func(c *Conn, p *rawPeer) {
			p.sendData(c, 0, []byte("x"), uint32(c.cfg.rbufSize))
		}, "131072 bytes, but only 65536"},
		{"data past the published half", nil, func(c *Conn, p *rawPeer) {
			p.sendData(c, 0, nil, 60000)
			p.sendData(c, 0, nil, 6000)
		}, "6000 bytes, but only 5536"},
		{"reserved message type", nil, func(c *Conn, p *rawPeer) { p.msg(1, 5) }, "reserved type 1"},
		{"local-only message type", nil, func(c *Conn, p *rawPeer) { p.msg(opWrite, 5) }, "reserved type 2"},
		{"unknown control", nil, func(c *Conn, p *rawPeer) { p.msg(opCtrl, 77) }, "unknown control message 77"},
		{"credits going back", nil, func(c *Conn, p *rawPeer) {
			c.Write(make([]byte, 10)) // sseqNo = 1
			p.msg(opSGL, 0)
		}, "credit limit 0 is behind"},
		{"SGL outside its MR", func(d *connData) { d.DataBuf.Addr += 1 << 40 }, func(c *Conn, p *rawPeer) {
			c.Write(make([]byte, 100))
		}, "outside its memory region"},
		{"message without immediate", nil, func(c *Conn, p *rawPeer) {
			p.e.w.mu.Lock()
			p.e.peer().recvs--
			p.e.peer().complete(recvNoImm)
			p.e.w.mu.Unlock()
		}, "without immediate data"},
		// A SEND carrying data finds a receive of 0 bytes: rxe reports
		// IBV_WC_LOC_QP_OP_ERR (its copy fails), hardware
		// IBV_WC_LOC_LEN_ERR; either way the peer's doing.
		{"SEND with data (rxe)", nil, func(c *Conn, p *rawPeer) {
			p.e.w.mu.Lock()
			p.e.peer().recvs--
			p.e.peer().complete(uverbs.WC{WRID: recvWRID, Status: uverbs.WCLocQPOpErr})
			p.e.w.mu.Unlock()
		}, "the peer sent a message larger than the 0-byte receive"},
		{"SEND with data (hardware)", nil, func(c *Conn, p *rawPeer) {
			p.e.w.mu.Lock()
			p.e.peer().recvs--
			p.e.peer().complete(uverbs.WC{WRID: recvWRID, Status: uverbs.WCLocLenErr})
			p.e.w.mu.Unlock()
		}, "where rsockets send only RDMA WRITE WITH IMMEDIATE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, p := rawPair(t, Options{}, tc.edit)
			tc.act(c, p)
			// Let the Conn take in what arrived without reading it.
			waitFor(t, "the violation", func() bool {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.progressLocked()
				return c.err != nil
			})
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := c.Read(make([]byte, 1<<20))
			for err == nil {
				_, err = c.Read(make([]byte, 1<<20))
			}
			if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("read: %v; want ErrProtocol saying %q", err, tc.want)
			}
			if _, werr := c.Write([]byte("x")); !errors.Is(werr, ErrProtocol) {
				t.Fatalf("write after the violation: %v", werr)
			}
			select {
			case <-p.e.gone:
			default:
				t.Fatal("the violating peer was not disconnected")
			}
			t.Log(err)
		})
	}
}

var recvNoImm = uverbs.WC{WRID: recvWRID, Status: uverbs.WCSuccess, Opcode: uverbs.WCRecv}

// TestFakeAllocs: in the steady state a Write and the Read that takes its
// data allocate nothing (the in-memory wire allocates nothing either).
func TestFakeAllocs(t *testing.T) {
	a, b, _ := fakePair(t, Options{}, Options{})
	for _, size := range []int{1, 64, 1000, 16384} {
		out, in := make([]byte, size), make([]byte, size)
		f := func() {
			if _, err := a.Write(out); err != nil {
				t.Fatal(err)
			}
			for got := 0; got < size; {
				n, err := b.Read(in[got:])
				if err != nil {
					t.Fatal(err)
				}
				got += n
			}
		}
		for range 100 {
			f() // reach the steady state: rings wrapped, credits flowing
		}
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%d-byte Write+Read: %v allocations, want 0", size, n)
		}
	}
}

// TestFakeNoLeaks: opening and closing many connections leaves no
// goroutines behind.
func TestFakeNoLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 200 {
		w := newFakeWire()
		cfg := testConfig(t, Options{KeepAlive: time.Millisecond})
		ma, mb := fakeMemory(w.ends[0], &cfg), fakeMemory(w.ends[1], &cfg)
		a := newConn(w.ends[0], ma, cfg, ownConnData(mb, &cfg), 0, fakeAddrA, fakeAddrB)
		b := newConn(w.ends[1], mb, cfg, ownConnData(ma, &cfg), 0, fakeAddrB, fakeAddrA)
		a.Write([]byte("hello"))
		b.Read(make([]byte, 5))
		a.Close()
		b.Close()
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// FuzzMessages feeds a Conn arbitrary immediate data (each record: 4 bytes
// of immediate data, 1 byte of payload length) from a raw peer: it must
// take it or fail with ErrProtocol, never panic or hang.
func FuzzMessages(f *testing.F) {
	f.Add([]byte{0, 0, 0, 5, 5})
	f.Add([]byte{0x80, 0, 1, 0, 0, 0xe0, 0, 0, 2, 0})
	f.Add([]byte{0xe0, 0, 0, 0, 0, 0, 0, 0, 1, 1})
	f.Add([]byte{0x20, 0, 0, 0, 0, 0xc0, 0, 0, 0, 3})
	f.Fuzz(func(t *testing.T, p []byte) {
		c, peer := rawPair(t, Options{RecvQueue: 16, RecvBuffer: 4096}, nil)
		off := 0
		for ; len(p) >= 5; p = p[5:] {
			imm := binary.BigEndian.Uint32(p)
			data := make([]byte, int(p[4])%64)
			if off+len(data) > len(c.mem.rbuf) {
				off = 0
			}
			peer.send(data, c.mem.rAddr+uint64(off), c.mem.rKey, &imm)
			off += len(data)
			c.mu.Lock()
			c.progressLocked()
			c.mu.Unlock()
		}
		c.SetDeadline(time.Now().Add(10 * time.Millisecond))
		buf := make([]byte, 100)
		for range 100 {
			_, err := c.Read(buf)
			if err == nil {
				continue
			}
			if err != io.EOF && !errors.Is(err, ErrProtocol) && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read: %v", err)
			}
			break
		}
		c.Write([]byte("x"))
	})
}

// TestFakeKeepAlive: a peer that stops answering without a word (its QP is
// gone; the CM has not noticed) fails a Read that waits for it with
// ETIMEDOUT once a keepalive's retries fail; without keepalive the Read
// would wait for its deadline.
func TestFakeKeepAlive(t *testing.T) {
	a, b, w := fakePair(t, Options{KeepAlive: 20 * time.Millisecond}, Options{})
	// A first exchange: a has published its whole ring, so nothing but
	// the keepalive is left for it to send.
	if _, err := b.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(a, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.ends[1].fail()
	w.mu.Unlock()
	a.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err := a.Read(make([]byte, 10))
	if !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("read from a silent peer: %v, want ETIMEDOUT from the keepalive", err)
	}
}

// TestFakeStats: a writer facing a reader that reads nothing stalls once the
// half of the receive ring published at connection time is full (a peer
// that never calls Read publishes no more, as with librdmacm), and Stats
// on both ends says why (no published buffer left; the data queued
// unread); after the reader drains, the stall ends.
func TestFakeStats(t *testing.T) {
	const ring = 4096
	a, b, _ := fakePair(t, Options{}, Options{RecvBuffer: ring})
	a.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	n, err := a.Write(make([]byte, 3*ring))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n != ring/2 {
		t.Fatalf("write to a peer that reads nothing: %d bytes, %v; want %d bytes, then the deadline", n, err, ring/2)
	}
	sa, sb := a.Stats(), b.Stats()
	t.Logf("writer: %v", sa)
	t.Logf("reader: %v", sb)
	if sa.PeerBuffer != 0 || sa.MessagesSent == 0 || sa.MessagesSent != sb.MessagesReceived {
		t.Errorf("writer stats %+v: want no peer buffer left and the reader's %d messages sent", sa, sb.MessagesReceived)
	}
	if sb.Queued != ring/2 || sb.MessagesRead != 0 {
		t.Errorf("reader stats %+v: want %d bytes queued, nothing read", sb, ring/2)
	}
	if _, err := io.ReadFull(b, make([]byte, ring/2)); err != nil {
		t.Fatal(err)
	}
	a.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := a.Write(make([]byte, ring/2)); err != nil {
		t.Fatalf("write after the reader drained: %v (writer: %v)", err, a.Stats())
	}
	if sb := b.Stats(); sb.MessagesRead == 0 || sb.CreditsGranted == 0 {
		t.Errorf("reader stats after reading %+v", sb)
	}
}

// TestFakeCloseTimeoutAfterDelivery: a DISCONNECTED that does not come
// within the CM's close timeout (its DREQ or the peer's DREP lost) fails
// Close only when data may be lost: after the peer acknowledged every byte
// and our DISCONNECT, Close returns nil, as librdmacm's rclose (which does
// not wait for it) and TCP's close do; any other teardown error, or a
// connection that had already failed, is still reported.
func TestFakeCloseTimeoutAfterDelivery(t *testing.T) {
	timeout := fmt.Errorf("rdma_cm disconnect 10.0.0.2:40000: no DISCONNECTED within 3s: %w", cm.ErrCloseTimeout)
	for _, c := range []struct {
		name     string
		err      error
		peerGone bool
		wantErr  bool
	}{
		{"timeout after delivery", errors.Join(errors.Join(timeout)), false, false},
		{"timeout and another error", errors.Join(timeout, errors.New("destroy qp: EBUSY")), false, true},
		{"timeout after the peer vanished", errors.Join(timeout), true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b, w := fakePair(t, Options{}, Options{})
			if _, err := a.Write(make([]byte, 10000)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(b, make([]byte, 10000)); err != nil {
				t.Fatal(err)
			}
			if c.peerGone {
				w.ends[1].disconnect()
				a.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := a.Read(make([]byte, 1)); err == nil {
					t.Fatal("read after the peer vanished succeeded")
				}
			}
			w.ends[0].closeErr = c.err
			err := a.Close()
			if (err != nil) != c.wantErr {
				t.Fatalf("Close: %v, want an error: %v", err, c.wantErr)
			}
			if err != nil && !errors.Is(err, cm.ErrCloseTimeout) {
				t.Errorf("Close: %v does not carry the CM's error", err)
			}
		})
	}
}

// BenchmarkFakeWriteRead is one 64-byte Write on one end and the Read that
// takes it on the other, over the in-memory wire, in one goroutine: the
// package's own work per message without the runtime's wait (nothing ever
// waits: the wire delivers as it posts). Its instructions per operation,
// counted with valgrind's callgrind, judge a change to the data path
// (scripts/ir.sh).
func BenchmarkFakeWriteRead(b *testing.B) {
	a, c, _ := fakePair(b, Options{}, Options{})
	out, in := make([]byte, 64), make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Write(out); err != nil {
			b.Fatal(err)
		}
		if n, err := c.Read(in); err != nil || n != len(in) {
			b.Fatalf("read %d, %v", n, err)
		}
	}
}

// TestDeadlineExpired: expired is true only for a deadline that passed,
// not without one, not after it was removed, and not when the parent (the
// connection's life) ended; wait's context ends in all three of the
// others' cases as before.
func TestDeadlineExpired(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	d := newDeadline(parent)
	if d.expired() || d.wait().Err() != nil {
		t.Fatal("a new deadline is expired or its context done")
	}
	first := d.wait()
	d.set(time.Now().Add(-time.Second))
	if !d.expired() || first.Err() == nil {
		t.Fatalf("a past deadline: expired %v, the previous context's error %v", d.expired(), first.Err())
	}
	d.set(time.Now().Add(time.Hour))
	if d.expired() {
		t.Fatal("a deadline an hour away is expired")
	}
	d.set(time.Time{})
	if d.expired() {
		t.Fatal("expired after the deadline was removed")
	}
	cancel()
	if d.expired() || d.wait().Err() != context.Canceled {
		t.Fatalf("after the parent ended: expired %v, context error %v (want false, Canceled)", d.expired(), d.wait().Err())
	}
	d.stop()
}

// TestFakeWritePostFails: a Write whose last part the QP refuses to post
// fails; it does not report the bytes as written.
func TestFakeWritePostFails(t *testing.T) {
	a, _, w := fakePair(t, Options{}, Options{})
	w.mu.Lock()
	w.ends[0].closed = true // the QP refuses posts
	w.mu.Unlock()
	n, err := a.Write([]byte("hello"))
	if err == nil || !strings.Contains(err.Error(), "post send") {
		t.Fatalf("Write: %d, %v; want the post's failure", n, err)
	}
}

// TestFakeUnsignaledSends: in a request-reply exchange of small messages a
// Conn signals only some of its sends (postLocked), and the completions of
// those it signals free the others exactly: once a send from the ring
// (always signalled) has completed, every send slot and ring byte is free
// again.
func TestFakeUnsignaledSends(t *testing.T) {
	for _, o := range []Options{{}, {SendQueue: 16}} {
		a, b, w := fakePair(t, o, o)
		const rounds = 200
		msg, buf := make([]byte, 64), make([]byte, 64)
		for range rounds {
			for _, p := range [][2]*Conn{{a, b}, {b, a}} {
				if _, err := p[0].Write(msg); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(p[1], buf); err != nil {
					t.Fatal(err)
				}
			}
		}
		cfg := testConfig(t, o)
		for i, c := range []*Conn{a, b} {
			e := w.ends[i]
			e.w.mu.Lock()
			sig, done := e.signaled, e.sendsDone
			e.w.mu.Unlock()
			if done < rounds || sig > done/(a.maxUnsig-1)+2 {
				t.Errorf("%+v: end %d: %d of %d sends completed with a completion; want one in %d at most", o, i, sig, done, a.maxUnsig-1)
			}
			// A message larger than the inline size goes from the send
			// ring, signalled, and its completion frees the run before it.
			big := make([]byte, cfg.inline+1)
			if _, err := c.Write(big); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull([]*Conn{b, a}[i], big); err != nil {
				t.Fatal(err)
			}
			s := c.Stats()
			if s.SendSlotsFree != cfg.sqSize-qpCtrlSize || s.SendRingFree != cfg.sbufSize || s.CtrlInFlight != 0 {
				t.Errorf("%+v: end %d after a signalled send completed: %v; want %d slots and %d ring bytes free",
					o, i, s, cfg.sqSize-qpCtrlSize, cfg.sbufSize)
			}
		}
	}
}

// TestFakeUnsignaledFlushed: sends that fail complete with an error even
// when unsignalled (flushed when the QP fails), and then also come with
// the signalled send after them: each frees its slot and bytes once.
func TestFakeUnsignaledFlushed(t *testing.T) {
	a, _, w := fakePair(t, Options{}, Options{})
	cfg := testConfig(t, Options{})
	ea := w.ends[0]
	ea.setHold(true)
	for range 5 {
		if _, err := a.Write(make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Write(make([]byte, cfg.inline+1)); err != nil { // signalled: carries the five
		t.Fatal(err)
	}
	if _, err := a.Write(make([]byte, 10)); err != nil { // an unsignalled one after it
		t.Fatal(err)
	}
	ea.w.mu.Lock()
	ea.fail()
	ea.w.mu.Unlock()
	s := a.Stats()
	if s.SendSlotsFree != cfg.sqSize-qpCtrlSize || s.SendRingFree != cfg.sbufSize {
		t.Errorf("after the sends were flushed: %v; want %d slots and %d ring bytes free", s, cfg.sqSize-qpCtrlSize, cfg.sbufSize)
	}
}

// TestFakeCloseUnsignaledTail: Close waits for sends that raise no
// completion (the unsignalled run after the last signalled send) by
// looking at the send queue, and returns once the wire took them, not at
// its close timeout; the peer gets every byte.
func TestFakeCloseUnsignaledTail(t *testing.T) {
	o := Options{CloseTimeout: 30 * time.Second}
	a, b, w := fakePair(t, o, o)
	ea := w.ends[0]
	// b's DISCONNECT, and nothing else yet (its Close would also end the
	// connection, which flushes a's sends): a cannot send its own.
	b.mu.Lock()
	b.sendCtrlLocked(ctrlDisconnect)
	b.connected = false
	b.mu.Unlock()
	if got, err := io.ReadAll(a); err != nil || len(got) != 0 {
		t.Fatalf("a: ReadAll = %q, %v; want EOF", got, err)
	}
	a.mu.Lock()
	ea.setHold(true)
	for range 3 { // what a Write would have posted just before the DISCONNECT came
		a.writeDataLocked([]byte("tail"), false)
	}
	unsig := a.unsigN
	a.mu.Unlock()
	if unsig != 3 {
		t.Fatalf("%d of the 3 sends unsignalled, want 3", unsig)
	}
	ea.closeErr = cm.ErrCloseTimeout // fails Close unless every send completed
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	time.Sleep(20 * time.Millisecond)
	ea.setHold(false)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits (up to its close timeout) for unsignalled sends that completed")
	}
}
