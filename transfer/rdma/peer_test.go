// Copyright 2026 The rdmago Authors.

package rdma

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/cm"
)

// rsConnData is an rs_conn_data as librdmacm lays it out (the golden bytes
// of rsocket's TestConnDataGolden: version 1, RS_CONN_FLAG_IOMAP, 384
// credits, a 2-entry target SGL, a 64 KiB first buffer), zero-padded to
// the 56 bytes of a connection request's private data.
func rsConnData(t *testing.T) []byte {
	b, err := hex.DecodeString("01020180" + "00000000" +
		"00007f0011223340" + "00001234" + "00000002" +
		"00007f0055667700" + "0000abcd" + "00010000")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, make([]byte, 16)...)
}

func TestPeerData(t *testing.T) {
	rs := rsConnData(t)
	edit := func(f func(b []byte)) []byte {
		b := append([]byte(nil), rs...)
		f(b)
		return b
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		foreign bool
		other   string // a part of the description; "" for none
	}{
		{"rsockets request", rs, true, ""},
		{"rsockets accept", append(append([]byte(nil), rs...), make([]byte, 196-len(rs))...), true, ""},
		{"rsockets big-endian host", edit(func(b []byte) { b[1] = 3 }), true, ""},
		{"rdmacp (nothing, padded)", make([]byte, 56), false, ""},
		{"rdmacp (nothing)", nil, false, ""},
		{"version 2", edit(func(b []byte) { b[0] = 2 }), false, "connection private data rdmacp does not send (38 bytes before the zero padding: 02 02 01 80 00 00 00 00 00 00 7f 00 11 22 33 40...)"},
		{"no credits", edit(func(b []byte) { b[2], b[3] = 0, 0 }), false, "38 bytes"},
		{"unknown flag", edit(func(b []byte) { b[1] = 4 }), false, "38 bytes"},
		{"reserved set", edit(func(b []byte) { b[5] = 1 }), false, "38 bytes"},
		{"empty target SGL", edit(func(b []byte) { b[8+15] = 0 }), false, "38 bytes"},
		{"empty first buffer", edit(func(b []byte) { b[24+13] = 0 }), false, "36 bytes"},
		{"short", rs[:39], false, "38 bytes"},
		{"text", []byte("hello"), false, "connection private data rdmacp does not send (5 bytes before the zero padding: 68 65 6c 6c 6f)"},
	} {
		foreign, other := peerData(tc.data)
		if foreign != tc.foreign || (tc.other == "") != (other == "") || !strings.Contains(other, tc.other) {
			t.Errorf("%s: peerData = %v, %q; want %v, %q", tc.name, foreign, other, tc.foreign, tc.other)
		}
	}
}

func TestForeignReceiverError(t *testing.T) {
	err := foreignReceiver("10.0.0.1:7427")
	if !errors.Is(err, ErrForeignPeer) || retryable(err) {
		t.Errorf("%v: want ErrForeignPeer, not retryable", err)
	}
	for _, w := range []string{"10.0.0.1:7427 speaks rsockets (rcopy, rstream or a program under librspreload), not rdmacp", "not an rdmacp receiver"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
}

func TestSilentReject(t *testing.T) {
	rej := func(reason cm.RejectReason, data []byte) error {
		return fmt.Errorf("connect to h: %w", &cm.EventError{Op: "connect", Event: cm.EventRejected, Status: int32(reason), PrivateData: data})
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"raccept's (none)", rej(cm.RejConsumerDefined, nil), true},
		{"raccept's (zero-padded)", rej(cm.RejConsumerDefined, make([]byte, 148)), true},
		{"an rdmacp receiver busy", rej(cm.RejConsumerDefined, []byte(busyText)), false},
		{"an rdmacp receiver refusing rsockets", rej(cm.RejConsumerDefined, []byte(refuseText)), false},
		{"nobody listens", rej(cm.RejInvalidServiceID, nil), false},
		{"unreachable", &cm.EventError{Op: "connect", Event: cm.EventUnreachable, Status: -110}, false},
		{"other", errors.New("x"), false},
		{"nil", nil, false},
	} {
		if got := silentReject(tc.err); got != tc.want {
			t.Errorf("%s: silentReject(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	err := foreignRejecter("10.0.0.1:7427", silentRejects, rej(cm.RejConsumerDefined, nil))
	if !errors.Is(err, ErrForeignPeer) || retryable(err) {
		t.Errorf("%v: want ErrForeignPeer, not retryable", err)
	}
	for _, w := range []string{"10.0.0.1:7427 rejected 5 connection requests in a row without a word", "rsockets (rcopy, rstream or a program under librspreload)", "not an rdmacp receiver"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
}
