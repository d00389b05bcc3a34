// Copyright 2026 The rdmago Authors.

package ping

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/uverbs"
)

// message builds what role sends as its seq-th message on QP index i.
func message(t *testing.T, role byte, size, i int, seq uint32) []byte {
	t.Helper()
	p := &Pingpong{cfg: PingpongConfig{Size: size, Server: role == 's'}, qps: make([]PingpongQP, i+1), sseq: make([]uint32, i+1)}
	p.sseq[i] = seq
	m := make([]byte, size)
	p.send.B = make([]byte, (i+1)*size)
	// postSend's formatting without the post.
	b := p.send.B[i*size : (i+1)*size]
	fill(b)
	if size >= HeaderMin {
		copy(b[1:], ppMagic)
		b[9] = p.role()
		b[10], b[11] = byte(i>>8), byte(i)
		b[12], b[13], b[14], b[15] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
	}
	copy(m, b)
	return m
}

func TestPingpongCheck(t *testing.T) {
	const size = 8192
	cFill := make([]byte, size)
	for i := range cFill {
		cFill[i] = fillByte
	}
	cChk := append([]byte(nil), cFill...)
	cChk[0], cChk[4096] = 0, 0 // ibv_*_pingpong -c
	// ibv_srq_pingpong clears its buffer, and echoes from that one buffer
	// while receives for its other QPs land in it.
	zeros := make([]byte, size)
	torn := message(t, 's', size, 2, 7)
	clear(torn[1024:])
	tornRC := append([]byte(nil), torn...)
	for _, tc := range []struct {
		name string
		msgs [][]byte
		peer string
		err  string
		srq  bool
	}{
		{"rdmaping", [][]byte{message(t, 'c', size, 0, 0), message(t, 'c', size, 0, 1)}, "rdmaping", "", false},
		{"C buffer", [][]byte{cFill, cChk}, "ibv_*_pingpong", "", false},
		{"C echo", [][]byte{message(t, 's', size, 0, 0), message(t, 's', size, 0, 1)}, "ibv_*_pingpong", "", false},
		{"rdmaping skips", [][]byte{message(t, 'c', size, 0, 0), message(t, 'c', size, 0, 2)}, "", "sequence number 2, want 1", false},
		{"wrong size", [][]byte{cFill[:100]}, "", "100 bytes, want 8192", false},
		{"garbage", [][]byte{make([]byte, size)}, "", "neither rdmaping's pingpong nor an ibv_*_pingpong buffer", false},
		{"changes", [][]byte{cFill, message(t, 'c', size, 0, 1)}, "", "looked like ibv_*_pingpong but now sends as rdmaping", false},
		{"srq zeros", [][]byte{zeros, message(t, 's', size, 3, 0), torn}, "ibv_*_pingpong", "", true},
		{"rc torn echo", [][]byte{tornRC}, "", "our echoed data came back changed", false},
		{"srq other byte", [][]byte{cChk, bytes.Repeat([]byte{1}, size)}, "", "(0x7b or 0 bytes)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The server checks the client's messages.
			p := &Pingpong{cfg: PingpongConfig{Size: size, Server: true, Type: uverbs.QPTypeRC}, qps: make([]PingpongQP, 1), rseq: make([]uint32, 1), shared: tc.srq}
			var err error
			for _, m := range tc.msgs {
				if err = p.check(0, m); err != nil {
					break
				}
			}
			if tc.err == "" {
				if err != nil || p.Peer != tc.peer {
					t.Fatalf("peer %q, %v; want %q", p.Peer, err, tc.peer)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one with %q", err, tc.err)
			}
		})
	}
	// A corrupted byte in an rdmaping message is found.
	m := message(t, 'c', size, 0, 0)
	m[5000] = 1
	p := &Pingpong{cfg: PingpongConfig{Size: size, Server: true}, qps: make([]PingpongQP, 1), rseq: make([]uint32, 1)}
	if err := p.check(0, m); err == nil || !strings.Contains(err.Error(), "data mismatch") {
		t.Errorf("corrupted message: %v", err)
	}
}
