// Copyright 2026 The rdmago Authors.

package pcap

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// The golden file below is written from the format description: a 24-byte
// little-endian file header then 16-byte record headers.
const goldenHex = "" +
	"d4c3b2a1" + "0200" + "0400" + "00000000" + "00000000" + "00000100" + "01000000" + // header, snaplen 65536, ethernet
	"15cd5b07" + "40e20100" + "04000000" + "04000000" + "deadbeef" + // 2033-05-18 ... 123456us, 4 of 4 bytes
	"15cd5b07" + "41e20100" + "02000000" + "0a000000" + "0102" // 2 of 10 bytes stored

func TestWriterGolden(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, 65536, LinkTypeEthernet, false)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(0x075bcd15, 123456789)
	if err := w.WritePacket(ts, []byte{0xde, 0xad, 0xbe, 0xef}, 4); err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(ts.Add(time.Microsecond), []byte{1, 2}, 10); err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(buf.Bytes()); got != goldenHex {
		t.Errorf("pcap bytes\n got %s\nwant %s", got, goldenHex)
	}
}

func TestSnapLenCutsAndRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, 3, LinkTypeEthernet, true)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1700000000, 987654321)
	if err := w.WritePacket(ts, []byte("abcdef"), 0); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType != LinkTypeEthernet || r.SnapLen != 3 {
		t.Errorf("header: link %d snap %d", r.LinkType, r.SnapLen)
	}
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Data) != "abc" || rec.OrigLen != 6 || !rec.Time.Equal(ts) {
		t.Errorf("record = %q orig %d at %v, want \"abc\" orig 6 at %v", rec.Data, rec.OrigLen, rec.Time, ts)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after last record: %v, want io.EOF", err)
	}
}

func TestReaderGoldenAndBigEndian(t *testing.T) {
	b, _ := hex.DecodeString(goldenHex)
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Time.Nanosecond() != 123456000 || !bytes.Equal(rec.Data, []byte{0xde, 0xad, 0xbe, 0xef}) {
		t.Errorf("first record %v % x", rec.Time, rec.Data)
	}

	// The same header written big endian (as a SPARC tcpdump would).
	be, _ := hex.DecodeString("a1b2c3d4" + "0002" + "0004" + "00000000" + "00000000" + "0000ffff" + "00000001" +
		"00000001" + "00000002" + "00000001" + "00000001" + "7f")
	r, err = NewReader(bytes.NewReader(be))
	if err != nil {
		t.Fatal(err)
	}
	rec, err = r.Next()
	if err != nil || rec.Data[0] != 0x7f || rec.Time.Unix() != 1 || rec.Time.Nanosecond() != 2000 {
		t.Errorf("big-endian record %+v, %v", rec, err)
	}
}

func TestErrors(t *testing.T) {
	if _, err := NewWriter(io.Discard, 0, 1, false); err == nil {
		t.Error("snaplen 0 accepted")
	}
	if _, err := NewReader(strings.NewReader("\x0a\x0d\x0d\x0a" + strings.Repeat("\x00", 20))); err == nil ||
		!strings.Contains(err.Error(), "pcapng") {
		t.Errorf("pcapng file: %v", err)
	}
	b, _ := hex.DecodeString(goldenHex)
	r, err := NewReader(bytes.NewReader(b[:len(b)-1]))
	if err != nil {
		t.Fatal(err)
	}
	r.Next()
	if _, err := r.Next(); err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated data: %v", err)
	}
}
