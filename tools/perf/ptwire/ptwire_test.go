// Copyright 2026 The rdmago Authors.

package ptwire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The lab's ib_write_bw printed this QP (testdata of tools/perf):
//
//	local address: LID 0000 QPN 0x0012 PSN 0x2878e6 RKey 0x0003f7 VAddr 0x0055b05fad8000
//	GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:01
var labDest = Dest{
	OutReads: 0x80, QPN: 0x12, PSN: 0x2878e6, RKey: 0x3f7, VAddr: 0x55b05fad8000,
	GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 77, 14: 0, 15: 1},
}

const labKeys = "0000:0080:000012:2878e6:000003f7:000055b05fad8000:00:00:00:00:00:00:00:00:00:00:ff:ff:0a:4d:00:01:00000000:"

func TestDestMarshal(t *testing.T) {
	b := labDest.MarshalText()
	if len(b) != 108 {
		t.Fatalf("%d bytes, want perftest's KEY_MSG_SIZE_GID 108", len(b))
	}
	if got := strings.TrimRight(string(b), "\x00"); got != labKeys {
		t.Errorf("got  %q\nwant %q", got, labKeys)
	}
	if b[107] != 0 {
		t.Error("the message must end in the NUL sprintf writes")
	}
	d, err := ParseDest(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(labDest, d); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestParseDestRejects(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0000:000012:2878e6:000003f7:0000:", `keys message "0000:000012:2878e6:000003f7:0000:"`},
		{strings.Replace(labKeys, "2878e6", "2878g6", 1), `field 4 "2878g6"`},
		{strings.Replace(labKeys, ":4d:", ":4d4:", 1), `GID byte 13 "4d4"`},
		{strings.TrimSuffix(labKeys, ":") + "x", "want 23 colon-terminated"},
		{"\x00\x00\x00\x1f{\"kind\":\"qps\"}", `"\x00\x00\x00\x1f{\"kind\":\"qps\"}"`},
	} {
		b := make([]byte, 108)
		copy(b, tc.in)
		_, err := ParseDest(b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDest(%q) = %v, want an error containing %s", tc.in, err, tc.want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	v, err := ParseVersion(append([]byte("6.06"), make([]byte, 12)...))
	if err != nil || v != "6.06" {
		t.Errorf("6.06: %q, %v", v, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"5.60\x00", "perftest 5.60"},
		{"\x00\x00\x00\xb4{\"kind\":\"hello\"", "rdmaperf's own protocol: drop --perftest"},
		{"000000:000012:28", "QP address (ibv_*_pingpong's exchange?)"},
		{"GET / HTTP/1.1\r\n", `"GET / HTTP/1.1\r\n"`},
		{"", "the peer is not perftest"},
	} {
		b := make([]byte, 16)
		copy(b, tc.in)
		_, err := ParseVersion(b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseVersion(%q) = %v, want an error containing %s", tc.in, err, tc.want)
		}
	}
}

func TestV4Mapped(t *testing.T) {
	if !V4Mapped(labDest.GID) {
		t.Error("::ffff:10.77.0.1 is IPv4-mapped")
	}
	if V4Mapped([16]byte{0: 0xfe, 1: 0x80, 15: 1}) {
		t.Error("fe80::1 is not")
	}
}

// pair connects a client and a server Conn over TCP on loopback.
func pair(t *testing.T, wait time.Duration) (client, server *Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	client, server = NewConn(cc, true, wait), NewConn(sc, false, wait)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// both runs f on the server in a goroutine and g on the client.
func both(t *testing.T, f, g func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	if err := g(); err != nil {
		t.Errorf("client: %v", err)
	}
	if err := <-errc; err != nil {
		t.Errorf("server: %v", err)
	}
}

// A whole write_bw exchange between the two sides of this package.
func TestExchange(t *testing.T) {
	c, s := pair(t, 5*time.Second)
	sd := labDest
	cd := labDest
	cd.QPN, cd.PSN = 0x11, 0x977afe
	rep := BWReport{Size: 4096, Iters: 200, Peak: 31.66, Average: 9.95, MsgRate: 0.002548}
	var gotS, gotC Dest
	var gotRep BWReport
	var mtuS, mtuC, cycS, lineC int
	both(t, func() error {
		if _, err := s.Versions(); err != nil {
			return err
		}
		var err error
		if cycS, _, err = s.SysData(65536, 64); err != nil {
			return err
		}
		if mtuS, err = s.MTU(5); err != nil {
			return err
		}
		if gotS, err = s.Keys("keys", sd); err != nil {
			return err
		}
		if gotRep, err = s.Reports(BWReport{}); err != nil {
			return err
		}
		return s.Done(sd)
	}, func() error {
		if _, err := c.Versions(); err != nil {
			return err
		}
		var err error
		if _, lineC, err = c.SysData(4096, 128); err != nil {
			return err
		}
		if mtuC, err = c.MTU(3); err != nil {
			return err
		}
		if gotC, err = c.Keys("keys", cd); err != nil {
			return err
		}
		if _, err = c.Reports(rep); err != nil {
			return err
		}
		return c.Done(cd)
	})
	if c.PeerVersion != Version || s.PeerVersion != Version {
		t.Errorf("versions %q %q", c.PeerVersion, s.PeerVersion)
	}
	if cycS != 65536 || lineC != 128 || mtuS != 3 || mtuC != 3 {
		t.Errorf("page size %d, cache line %d, MTU %d/%d: want the larger sizes and the smaller MTU", cycS, lineC, mtuS, mtuC)
	}
	if gotS != cd || gotC != sd {
		t.Errorf("keys: server got %+v, client got %+v", gotS, gotC)
	}
	if gotRep != rep {
		t.Errorf("report %+v, want %+v", gotRep, rep)
	}
}

// A silent peer ends the wait with ErrTimeout; a closed one says so.
func TestPeerSilentOrGone(t *testing.T) {
	c, s := pair(t, 200*time.Millisecond)
	t0 := time.Now()
	_, err := s.Versions()
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "versions") {
		t.Errorf("silent client: %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("the wait took %v", d)
	}
	c.c.Write([]byte("6.0"))
	c.Close()
	_, err = s.Versions()
	if err == nil || !strings.Contains(err.Error(), `after 3 of 16 bytes "6.0"`) || !strings.Contains(err.Error(), "closed the connection") {
		t.Errorf("closed client: %v", err)
	}
}

// capture reads a Go-quoted transcript of testdata.
func capture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var q string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, `"`) {
			q = l
		}
	}
	s, err := strconv.Unquote(q)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return []byte(s)
}

// replay plays a captured perftest side on one end of a connection: it
// sends the whole transcript and returns all this package's side sent.
func replay(t *testing.T, script []byte, client bool, run func(*Conn) error) []byte {
	t.Helper()
	ours, theirs := pair(t, 5*time.Second)
	if !client {
		ours, theirs = theirs, ours
	}
	got := make(chan []byte, 1)
	go func() {
		theirs.c.Write(script)
		b, _ := io.ReadAll(theirs.c)
		got <- b
	}()
	if err := run(ours); err != nil {
		t.Fatal(err)
	}
	ours.Close()
	return <-got
}

// writeBW is write_bw's exchange with one QP, either side.
func writeBW(c *Conn, d Dest, rep BWReport) (peer Dest, peerRep BWReport, mtu int, err error) {
	if _, err = c.Versions(); err != nil {
		return
	}
	if _, _, err = c.SysData(4096, 64); err != nil {
		return
	}
	if mtu, err = c.MTU(3); err != nil {
		return
	}
	for _, step := range []string{"keys", "keys again", "RTR", "end of run"} {
		if peer, err = c.Keys(step, d); err != nil {
			return
		}
	}
	if peerRep, err = c.Reports(rep); err != nil {
		return
	}
	err = c.Done(d)
	return
}

// rdmaperf as client of the captured ib_write_bw server, and as server for
// the captured client: it reads each of their messages and sends the same
// bytes as perftest where they do not depend on the QP or the run.
func TestReplayWriteBW(t *testing.T) {
	for _, tc := range []struct {
		file   string
		client bool // this package's side
		qpn    uint32
	}{
		{"ib_write_bw_server.txt", true, 0x31},
		{"ib_write_bw_client.txt", false, 0x32},
	} {
		t.Run(tc.file, func(t *testing.T) {
			script := capture(t, tc.file)
			var peer Dest
			var peerRep BWReport
			var mtu int
			sent := replay(t, script, tc.client, func(c *Conn) error {
				var err error
				peer, peerRep, mtu, err = writeBW(c, labDest, BWReport{Size: 4096, Iters: 50, Peak: 40, Average: 35, MsgRate: 0.009})
				if c.PeerVersion != "6.06" {
					t.Errorf("peer version %q", c.PeerVersion)
				}
				return err
			})
			if peer.QPN != tc.qpn || peer.OutReads != 1 || peer.VAddr == 0 || !V4Mapped(peer.GID) || mtu != 3 {
				t.Errorf("peer %+v, MTU %d", peer, mtu)
			}
			if !tc.client && (peerRep.Size != 4096 || peerRep.Iters != 50 || !(peerRep.Average > 30 && peerRep.Average < 40) || !(peerRep.MsgRate > 0)) {
				t.Errorf("the client's report %+v, want 4096 bytes x 50 at ~35 MB/s", peerRep)
			}
			if len(sent) != len(script) {
				t.Fatalf("sent %d bytes, perftest %d", len(sent), len(script))
			}
			// Version, page and cache line sizes, MTU; the closing "done".
			if !bytes.Equal(sent[:26], script[:26]) || !bytes.HasSuffix(sent, []byte("0:\x00done\x00")) {
				t.Errorf("sent %q ... %q\nperftest %q ... %q", sent[:26], sent[len(sent)-10:], script[:26], script[len(script)-10:])
			}
		})
	}
}

// The rdma_cm exchange's keys: struct pingpong_dest, big-endian, as
// rdma_write_keys fills it (the padding after rkey zero here).
func TestDestBinary(t *testing.T) {
	b := labDest.MarshalBinary()
	want := []byte{
		0, 0, 0, 0, // lid
		0, 0, 0, 0x80, // out_reads
		0, 0, 0, 0x12, // qpn
		0, 0x28, 0x78, 0xe6, // psn
		0, 0, 0x03, 0xf7, // rkey
		0, 0, 0, 0, // padding
		0, 0, 0x55, 0xb0, 0x5f, 0xad, 0x80, 0, // vaddr
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 1, // gid
		0, 0, 0, 0, // srqn
		0, 0, 0, 0, // gid_index
	}
	if !bytes.Equal(b, want) {
		t.Errorf("got  % x\nwant % x", b, want)
	}
	d, err := ParseDestBinary(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(labDest, d); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := ParseDestBinary(b[:55]); err == nil || !strings.Contains(err.Error(), "55 bytes") {
		t.Errorf("a short message: %v", err)
	}
}

// chanMessenger is one end of an in-memory message pipe.
type chanMessenger struct {
	in, out chan []byte
	sent    *[][]byte
}

func (m chanMessenger) WriteMsg(b []byte, d time.Duration) error {
	*m.sent = append(*m.sent, append([]byte(nil), b...))
	m.out <- append([]byte(nil), b...)
	return nil
}

func (m chanMessenger) ReadMsg(d time.Duration) ([]byte, error) {
	var tc <-chan time.Time
	if d > 0 {
		tc = time.After(d)
	}
	select {
	case b, ok := <-m.in:
		if !ok {
			return nil, io.ErrUnexpectedEOF
		}
		return b, nil
	case <-tc:
		return nil, os.ErrDeadlineExceeded
	}
}

func (m chanMessenger) Close() error { return nil }

// msgPair is a client and a server Conn of the rdma_cm exchange, and what
// each sent.
func msgPair(wait time.Duration) (client, server *Conn, csent, ssent *[][]byte) {
	a, b := make(chan []byte, 16), make(chan []byte, 16)
	csent, ssent = new([][]byte), new([][]byte)
	client = NewMsgConn(chanMessenger{in: b, out: a, sent: csent}, true, wait)
	server = NewMsgConn(chanMessenger{in: a, out: b, sent: ssent}, false, wait)
	return
}

// A whole write_bw exchange in rdma_cm mode: each message one SEND of
// perftest's sizes, binary keys, no "done".
func TestExchangeRDMACM(t *testing.T) {
	c, s, csent, _ := msgPair(5 * time.Second)
	cd := labDest
	cd.QPN = 0x11
	rep := BWReport{Size: 4096, Iters: 200, Peak: 31.66, Average: 9.95, MsgRate: 0.002548}
	var gotS, gotC Dest
	var gotRep BWReport
	both(t, func() error {
		var err error
		gotS, gotRep, _, err = writeBW(s, labDest, BWReport{})
		return err
	}, func() error {
		var err error
		gotC, _, _, err = writeBW(c, cd, rep)
		return err
	})
	if gotS != cd || gotC != labDest || gotRep != rep {
		t.Errorf("server got %+v and %+v, client %+v", gotS, gotRep, gotC)
	}
	var sizes []int
	for _, m := range *csent {
		sizes = append(sizes, len(m))
		if len(m) > DestLen {
			t.Errorf("a %d-byte message: perftest's receive holds %d", len(m), DestLen)
		}
	}
	// version, page size, cache line, MTU, 4 keys, 5 report fields, closing keys.
	want := []int{16, 4, 4, 2, 56, 56, 56, 56, 8, 8, 8, 8, 8, 56}
	if !slices.Equal(sizes, want) {
		t.Errorf("the client sent messages of %v bytes, want %v", sizes, want)
	}
}

// A peer on the rdma_cm exchange that is not perftest is named, a silent
// one times out.
func TestRDMACMPeerNotPerftest(t *testing.T) {
	c, s, _, _ := msgPair(200 * time.Millisecond)
	go s.m.WriteMsg([]byte(`{"kind":"error","err":"control message: invalid character"}`), 0)
	_, err := c.Versions()
	if err == nil || !strings.Contains(err.Error(), "rdmaperf's own protocol (-R)") {
		t.Errorf("rdmaperf's own -R server: %v", err)
	}
	_, err = c.Versions()
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("silent peer: %v", err)
	}
}
