// Copyright 2026 The rdmago Authors.

package netlink

import (
	"bytes"
	"encoding/hex"
	"errors"
	"syscall"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncoder(t *testing.T) {
	var e Encoder
	e.String(3, "t0")
	e.Uint32(1, 5)
	e.Uint8(12, 4)
	e.Uint64(4, 0x0102030405060708)
	e.Nested(18, func(n *Encoder) { n.String(1, "veth") })
	want := "0700030074300000" + // "t0\0" + 1 pad byte
		"0800010005000000" +
		"05000c0004000000" + // u8 + 3 pad bytes
		"0c0004000807060504030201" +
		"1000120009000100" + "7665746800000000" // nest {kind "veth\0" + pad}
	if got := hex.EncodeToString(e.Encode()); got != want {
		t.Errorf("encoded\n got %s\nwant %s", got, want)
	}
	attrs, err := ParseAttrs(e.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if len(attrs) != 5 {
		t.Fatalf("%d attributes back, want 5", len(attrs))
	}
	if attrs[0].String() != "t0" || attrs[1].Uint32() != 5 || attrs[2].Uint8() != 4 || attrs[3].Uint64() != 0x0102030405060708 {
		t.Errorf("decoded %+v", attrs)
	}
	inner, err := ParseAttrs(attrs[4].Data)
	if err != nil || len(inner) != 1 || inner[0].String() != "veth" {
		t.Errorf("nested: %v %+v", err, inner)
	}
}

func TestParseAttrsRejectsBadLength(t *testing.T) {
	for _, s := range []string{"0300", "03000100", "0900010000000000"} {
		if _, err := ParseAttrs(unhex(t, s)); err == nil {
			t.Errorf("ParseAttrs(%s) accepted a malformed attribute", s)
		}
	}
	// Flags in the type are masked off.
	a, err := ParseAttrs(unhex(t, "04001280"))
	if err != nil || len(a) != 1 || a[0].Type != 18 {
		t.Errorf("nested flag not masked: %v %+v", err, a)
	}
}

func TestMessageRoundTrip(t *testing.T) {
	m := Message{Header: Header{Type: 0x1403, Flags: NLM_F_REQUEST | NLM_F_ACK, Seq: 7, PID: 0}, Data: []byte{1, 2, 3}}
	b := m.Marshal()
	want := "1300000003140500070000000000000001020300"
	if got := hex.EncodeToString(b); got != want {
		t.Errorf("marshal\n got %s\nwant %s", got, want)
	}
	msgs, err := ParseMessages(append(b, b...))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[1].Header.Len != 19 || !bytes.Equal(msgs[1].Data, []byte{1, 2, 3}) || msgs[0].Header.Type != 0x1403 {
		t.Errorf("parsed %+v", msgs)
	}
	if _, err := ParseMessages(b[:10]); err == nil {
		t.Error("a truncated header was accepted")
	}
	bad := append([]byte(nil), b...)
	bad[0] = 200
	if _, err := ParseMessages(bad); err == nil {
		t.Error("a length beyond the buffer was accepted")
	}
}

func TestParseErrorExtAck(t *testing.T) {
	// NLMSG_ERROR -EINVAL, capped request header, NLMSGERR_ATTR_MSG "bad".
	data := unhex(t, "eaffffff"+"10000000031400000100000000000000"+"0800010062616400")
	m := Message{Header: Header{Type: NLMSG_ERROR, Flags: NLM_F_CAPPED | NLM_F_ACK_TLVS}, Data: data}
	code, msg, err := parseError(m)
	if err != nil || code != -22 || msg != "bad" {
		t.Errorf("parseError = %d %q %v, want -22 \"bad\"", code, msg, err)
	}
	e := &Error{Errno: syscall.Errno(-code), Msg: msg}
	if !errors.Is(e, syscall.EINVAL) {
		t.Error("Error does not unwrap to its errno")
	}
	if e.Error() != "invalid argument: bad" {
		t.Errorf("Error() = %q", e.Error())
	}
	// A plain ACK.
	code, _, err = parseError(Message{Header: Header{Type: NLMSG_ERROR}, Data: make([]byte, 20)})
	if err != nil || code != 0 {
		t.Errorf("ack: %d %v", code, err)
	}
}
