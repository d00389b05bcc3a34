// Copyright 2026 The rdmago Authors.

package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rdmago/rdmago/cm"
)

// ErrForeignPeer is matched (errors.Is) by the error of Dial (and of Dialer's
// DialFunc) when the program at the address is not an rdmacp receiver and seems to
// be an rsockets server (rcopy, rstream, a program under librspreload):
// it accepted with rs_conn_data (Dial closes the connection before
// anything is sent), or it rejected the requests of Dial with WaitForListener again and again
// without a word, as rsockets' raccept does with a request that carries
// no rs_conn_data. The error names what the peer seems to be. Trying
// again does not help.
var ErrForeignPeer = errors.New("the peer does not speak rdmacp")

// rdmacp's own connection requests and accepts carry no private data (the
// CM pads it with zeros); a peer that sends some is not an rdmacp of this
// or an earlier version. rsockets' is recognised (foreignPeer); other data
// is only logged, and the HELLO exchange decides.

// The layout of librdmacm's struct rs_conn_data (rsocket.c; package
// rsocket has the full parser), all big-endian: version (1), flags
// (RS_CONN_FLAG_NET|RS_CONN_FLAG_IOMAP), credits, 3 reserved bytes,
// target_iomap_size, then the target SGL and the first data buffer, each
// an rs_sge {addr u64, key u32, length u32}.
const (
	rsConnDataLen   = 40
	rsVersion       = 1
	rsConnFlags     = 1<<0 | 1<<1
	rsMaxTargetSGL  = 1 << 16
	rsTargetSGLLen  = 8 + 12 // target_sgl.length
	rsDataBufLen    = 24 + 12
	rsCreditsOffset = 2
)

// isRsocketConnData reports whether the CM private data b (zero-padded by
// the CM message) is a plausible rs_conn_data: what an rsockets peer sends
// in its connection request and in its accept.
func isRsocketConnData(b []byte) bool {
	if len(b) < rsConnDataLen {
		return false
	}
	return b[0] == rsVersion && b[1]&^rsConnFlags == 0 &&
		binary.BigEndian.Uint16(b[rsCreditsOffset:]) != 0 &&
		b[4] == 0 && b[5] == 0 && b[6] == 0 &&
		sglLen(b) >= 1 && sglLen(b) <= rsMaxTargetSGL &&
		binary.BigEndian.Uint32(b[rsDataBufLen:]) != 0
}

func sglLen(b []byte) uint32 { return binary.BigEndian.Uint32(b[rsTargetSGLLen:]) }

// rsocketPeer names what sends rs_conn_data, for messages.
const rsocketPeer = "rsockets (rcopy, rstream or a program under librspreload)"

// peerData classifies the private data of a peer's connection request or
// accept: foreign is true when it is rsockets' (what says so), and other
// describes data rdmacp does not send but cannot name ("" when it is all
// zeros, as rdmacp's own).
func peerData(b []byte) (foreign bool, other string) {
	if isRsocketConnData(b) {
		return true, ""
	}
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	if n == 0 {
		return false, ""
	}
	shown := b[:min(n, 16)]
	more := ""
	if n > len(shown) {
		more = "..."
	}
	return false, fmt.Sprintf("connection private data rdmacp does not send (%d bytes before the zero padding: % x%s)", n, shown, more)
}

// foreignReceiver is Dial's error for a receiver at addr that speaks
// rsockets.
func foreignReceiver(addr string) error {
	return fmt.Errorf("%w: the receiver at %s speaks %s, not rdmacp: it is not an rdmacp receiver (a transfer.Receiver)", ErrForeignPeer, addr, rsocketPeer)
}

// A Listener's rejects carry a text (an rdmacp receiver says why it turns
// a request away), so a reject without one comes from another program, or
// from the CM when setting up the connection failed.
const busyText = "rdmacp receiver: busy, try again"

// silentRejects is how many rejects without a word in a row make
// dialRetry give up on the address: with its pauses, half a second.
const silentRejects = 5

// silentReject reports whether err is a REJECTED from the peer application
// (IB_CM_REJ_CONSUMER_DEFINED) with no private data: what librdmacm's
// raccept answers a request without rs_conn_data with (rdma_reject with
// none, or the id destroyed unanswered).
func silentReject(err error) bool {
	var e *cm.EventError
	if err == nil || !errors.As(err, &e) {
		return false
	}
	if r, ok := e.RejectReason(); !ok || r != cm.RejConsumerDefined {
		return false
	}
	for _, b := range e.PrivateData {
		if b != 0 {
			return false
		}
	}
	return true
}

// foreignRejecter is dialRetry's error for a program at addr that rejected
// n requests in a row without a word.
func foreignRejecter(addr string, n int, last error) error {
	return fmt.Errorf("%w: the program at %s rejected %d connection requests in a row without a word, as a server speaking %s does with rdmacp's: it is not an rdmacp receiver (a transfer.Receiver; last: %v)", ErrForeignPeer, addr, n, rsocketPeer, last)
}
