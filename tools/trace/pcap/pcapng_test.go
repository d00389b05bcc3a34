// Copyright 2026 The rdmago Authors.

package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// TestPcapngMatchesPcap reads a two-node rping capture as rdmatrace wrote it
// (pcap) and as Wireshark's editcap -F pcapng converted it: the same
// packets, bytes and times.
func TestPcapngMatchesPcap(t *testing.T) {
	read := func(path string) (*Reader, []Record) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var recs []Record
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				return r, recs
			}
			if err != nil {
				t.Fatalf("%s: record %d: %v", path, len(recs), err)
			}
			recs = append(recs, rec)
		}
	}
	pr, want := read("../ibpkt/testdata/rping-6.1-two-nodes.pcap")
	nr, got := read("testdata/rping-6.1-two-nodes.pcapng")
	if nr.LinkType != pr.LinkType || nr.LinkType != LinkTypeEthernet {
		t.Errorf("link type %d, pcap %d", nr.LinkType, pr.LinkType)
	}
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%d records from pcapng, %d from pcap", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].Data, want[i].Data) || got[i].OrigLen != want[i].OrigLen || !got[i].Time.Equal(want[i].Time) {
			t.Errorf("record %d: pcapng %v %d bytes (orig %d), pcap %v %d bytes (orig %d)", i,
				got[i].Time, len(got[i].Data), got[i].OrigLen, want[i].Time, len(want[i].Data), want[i].OrigLen)
		}
	}
}

// ngFile builds pcapng blocks in byte order bo.
type ngFile struct {
	bo binary.ByteOrder
	b  bytes.Buffer
}

func (f *ngFile) block(typ uint32, body []byte) {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	n := uint32(12 + len(body))
	binary.Write(&f.b, f.bo, typ)
	binary.Write(&f.b, f.bo, n)
	f.b.Write(body)
	binary.Write(&f.b, f.bo, n)
}

func (f *ngFile) vals(vs ...any) []byte {
	var b bytes.Buffer
	for _, v := range vs {
		binary.Write(&b, f.bo, v)
	}
	return b.Bytes()
}

// TestPcapngBlocks: big endian, a binary timestamp resolution with an
// offset, a simple packet, an unknown block, and a second section in the
// other byte order.
func TestPcapngBlocks(t *testing.T) {
	f := &ngFile{bo: binary.BigEndian}
	shb := f.vals(uint32(ngByteOrderMagic), uint16(1), uint16(0), int64(-1))
	f.block(ngSectionHeader, append(shb, f.vals(uint16(1), uint16(4), uint32(0x41424344), uint16(0), uint16(0))...)) // shb_comment
	// if_tsresol 2^-10, if_tsoffset 100 s.
	f.block(ngInterface, f.vals(uint16(LinkTypeEthernet), uint16(0), uint32(64),
		uint16(ngOptIfTsresol), uint16(1), uint8(0x8a), [3]byte{}, uint16(ngOptIfTsoffset), uint16(8), int64(100),
		uint16(0), uint16(0)))
	f.block(0x0bad, []byte{1, 2, 3, 4})
	ts := uint64(5<<10 | 512) // 5.5 s in 1/1024 s
	f.block(ngEnhancedPacket, append(f.vals(uint32(0), uint32(ts>>32), uint32(ts), uint32(3), uint32(60)), 0xaa, 0xbb, 0xcc))
	f.block(ngSimplePacket, append(f.vals(uint32(100)), bytes.Repeat([]byte{7}, 100)...)) // cut to snaplen 64
	le := &ngFile{bo: binary.LittleEndian}
	le.block(ngSectionHeader, le.vals(uint32(ngByteOrderMagic), uint16(1), uint16(0), int64(-1)))
	le.block(ngInterface, le.vals(uint16(LinkTypeEthernet), uint16(0), uint32(0))) // microseconds
	le.block(ngEnhancedPacket, append(le.vals(uint32(0), uint32(0), uint32(1_500_000), uint32(1), uint32(1)), 0x42))
	f.b.Write(le.b.Bytes())

	r, err := NewReader(bytes.NewReader(f.b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType != LinkTypeEthernet || r.SnapLen != 64 {
		t.Errorf("link type %d snaplen %d", r.LinkType, r.SnapLen)
	}
	want := []Record{
		{Time: time.Unix(105, 5e8), Data: []byte{0xaa, 0xbb, 0xcc}, OrigLen: 60},
		{Data: bytes.Repeat([]byte{7}, 64), OrigLen: 100},
		{Time: time.Unix(1, 5e8), Data: []byte{0x42}, OrigLen: 1},
	}
	for i, w := range want {
		got, err := r.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !bytes.Equal(got.Data, w.Data) || got.OrigLen != w.OrigLen || !got.Time.Equal(w.Time) {
			t.Errorf("record %d: %v % x orig %d, want %v % x orig %d", i, got.Time, got.Data, got.OrigLen, w.Time, w.Data, w.OrigLen)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last record: %v, want io.EOF", err)
	}
}

func TestPcapngErrors(t *testing.T) {
	f := &ngFile{bo: binary.LittleEndian}
	f.block(ngSectionHeader, f.vals(uint32(ngByteOrderMagic), uint16(1), uint16(0), int64(-1)))
	shbOnly := bytes.Clone(f.b.Bytes())
	if _, err := NewReader(bytes.NewReader(shbOnly)); err == nil {
		t.Error("pcapng without an interface accepted")
	}
	f.block(ngEnhancedPacket, f.vals(uint32(0), uint32(0), uint32(0), uint32(0), uint32(0)))
	if _, err := NewReader(bytes.NewReader(f.b.Bytes())); err == nil {
		t.Error("packet before any interface accepted")
	}

	g := &ngFile{bo: binary.LittleEndian}
	g.b.Write(shbOnly)
	g.block(ngInterface, g.vals(uint16(LinkTypeEthernet), uint16(0), uint32(0)))
	g.block(ngEnhancedPacket, append(g.vals(uint32(3), uint32(0), uint32(0), uint32(1), uint32(1)), 1)) // interface 3
	r, err := NewReader(bytes.NewReader(g.b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err == nil {
		t.Error("packet of an undescribed interface accepted")
	}

	bad := bytes.Clone(g.b.Bytes())
	bad[len(bad)-1] ^= 0xff // the trailing length of the last block
	r, err = NewReader(bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err == nil {
		t.Error("mismatched block lengths accepted")
	}
}
