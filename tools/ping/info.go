// Copyright 2026 The rdmago Authors.

// Package ping holds rdmaping's protocols: rdma-core's rping (its
// rping_rdma_info advertisements and RDMA READ/WRITE sequence), udaddy's
// datagram exchange, the rdma_server/rdma_client message pair, and the
// classic verbs demos (send, send with immediate, write, write with
// immediate, read, atomics) over an rdma_cm connection or a QP connected
// by an out-of-band TCP exchange. Command rdmaping holds the flags and
// output; this package holds the logic.
package ping

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Info is struct rping_rdma_info (librdmacm/examples/rping.c): the
// advertisement of a buffer a peer may RDMA READ or WRITE. On the wire it
// is 16 bytes in network byte order: buf (__be64), rkey (__be32), size
// (__be32).
type Info struct {
	Buf  uint64
	RKey uint32
	Size uint32
}

// InfoSize is sizeof(struct rping_rdma_info).
const InfoSize = 16

// Marshal encodes i as rping sends it.
func (i Info) Marshal(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, i.Buf)
	b = binary.BigEndian.AppendUint32(b, i.RKey)
	return binary.BigEndian.AppendUint32(b, i.Size)
}

// Put writes i into b[:16].
func (i Info) Put(b []byte) {
	binary.BigEndian.PutUint64(b, i.Buf)
	binary.BigEndian.PutUint32(b[8:], i.RKey)
	binary.BigEndian.PutUint32(b[12:], i.Size)
}

// ParseInfo decodes an advertisement. rping rejects any message that is
// not exactly 16 bytes ("Received bogus data"); so does ParseInfo.
func ParseInfo(b []byte) (Info, error) {
	if len(b) != InfoSize {
		return Info{}, fmt.Errorf("rping_rdma_info of %d bytes, want %d", len(b), InfoSize)
	}
	return Info{
		Buf:  binary.BigEndian.Uint64(b),
		RKey: binary.BigEndian.Uint32(b[8:]),
		Size: binary.BigEndian.Uint32(b[12:]),
	}, nil
}

func (i Info) String() string {
	return fmt.Sprintf("addr %#x rkey %#x len %d", i.Buf, i.RKey, i.Size)
}

// rping's limits: RPING_BUFSIZE (64 KiB) and RPING_MIN_BUFSIZE, the size
// of "2147483647" plus the size of "rdma-ping-%d: ", both with their NUL.
const (
	MaxSize     = 64*1024 - 1
	MinSize     = len("2147483647") + 1 + len("rdma-ping-%d: ") + 1
	DefaultSize = 64
	DefaultPort = 7174
)

// FillPing writes rping client's ping number n into buf, as rping_test_client
// does: "rdma-ping-N: " followed by the printable characters 'A' to 'z'
// cycling from start, and a NUL as the last byte. It returns the next
// start (start advances by one per ping, wrapping from 'z' to 'A').
func FillPing(buf []byte, n int, start byte) byte {
	head := "rdma-ping-" + strconv.Itoa(n) + ": "
	cc := copy(buf, head)
	if cc > len(buf)-1 {
		cc = len(buf) - 1 // snprintf truncates, keeping the NUL
	}
	c := start
	for i := cc; i < len(buf); i++ {
		buf[i] = c
		c++
		if c > 122 {
			c = 65
		}
	}
	buf[len(buf)-1] = 0
	start++
	if start > 122 {
		start = 65
	}
	return start
}

// CString returns b up to its first NUL, as printf("%s") shows it.
func CString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
