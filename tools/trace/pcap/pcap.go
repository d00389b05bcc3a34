// Copyright 2026 The rdmago Authors.

// Package pcap writes classic libpcap capture files (the format of
// tcpdump -w and Wireshark's "pcap"), as described in
// draft-ietf-opsawg-pcap (https://www.ietf.org/archive/id/draft-ietf-opsawg-pcap-04.html),
// and reads them and pcapng files (dumpcap's default, draft-ietf-opsawg-pcapng).
//
// The writer produces little-endian files with microsecond or nanosecond
// timestamps; the reader accepts either byte order and either resolution.
// Pure Go, no syscalls: the caller owns the io.Writer/io.Reader.
package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Link types (https://www.tcpdump.org/linktypes.html).
const (
	LinkTypeEthernet = 1
)

// Magic numbers of the file header.
const (
	MagicMicroseconds = 0xa1b2c3d4
	MagicNanoseconds  = 0xa1b23c4d
)

const (
	fileHeaderLen   = 24
	recordHeaderLen = 16
	versionMajor    = 2
	versionMinor    = 4
	// MaxSnapLen is the largest snapshot length the writer accepts, as tcpdump.
	MaxSnapLen = 262144
)

// Writer writes a pcap file: the file header on creation, then one record per
// WritePacket. It does not buffer; wrap the destination in a bufio.Writer
// (and Flush it) for speed.
type Writer struct {
	w       io.Writer
	snapLen uint32
	nanos   bool
}

// NewWriter writes the file header for link type linkType to w and returns a
// Writer. snapLen (1..MaxSnapLen) is the largest number of bytes stored per
// packet; nanos selects nanosecond timestamps (magic 0xa1b23c4d).
func NewWriter(w io.Writer, snapLen int, linkType uint32, nanos bool) (*Writer, error) {
	if snapLen <= 0 || snapLen > MaxSnapLen {
		return nil, fmt.Errorf("pcap: snapshot length %d out of range 1..%d", snapLen, MaxSnapLen)
	}
	var h [fileHeaderLen]byte
	magic := uint32(MagicMicroseconds)
	if nanos {
		magic = MagicNanoseconds
	}
	binary.LittleEndian.PutUint32(h[0:], magic)
	binary.LittleEndian.PutUint16(h[4:], versionMajor)
	binary.LittleEndian.PutUint16(h[6:], versionMinor)
	// thiszone and sigfigs stay 0.
	binary.LittleEndian.PutUint32(h[16:], uint32(snapLen))
	binary.LittleEndian.PutUint32(h[20:], linkType)
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("pcap: write file header: %w", err)
	}
	return &Writer{w: w, snapLen: uint32(snapLen), nanos: nanos}, nil
}

// WritePacket writes one record: data (cut to the snapshot length) captured at
// ts, whose length on the wire was origLen (at least len(data)).
func (w *Writer) WritePacket(ts time.Time, data []byte, origLen int) error {
	if origLen < len(data) {
		origLen = len(data)
	}
	if uint32(len(data)) > w.snapLen {
		data = data[:w.snapLen]
	}
	var h [recordHeaderLen]byte
	sub := uint32(ts.Nanosecond() / 1000)
	if w.nanos {
		sub = uint32(ts.Nanosecond())
	}
	binary.LittleEndian.PutUint32(h[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(h[4:], sub)
	binary.LittleEndian.PutUint32(h[8:], uint32(len(data)))
	binary.LittleEndian.PutUint32(h[12:], uint32(origLen))
	if _, err := w.w.Write(h[:]); err != nil {
		return fmt.Errorf("pcap: write record header: %w", err)
	}
	if _, err := w.w.Write(data); err != nil {
		return fmt.Errorf("pcap: write packet data: %w", err)
	}
	return nil
}

// Reader reads records from a pcap file.
type Reader struct {
	r        io.Reader
	bo       binary.ByteOrder
	nanos    bool
	SnapLen  uint32
	LinkType uint32 // of the first interface, for pcapng
	ng       *ngState
}

// NewReader reads and checks the file header.
func NewReader(r io.Reader) (*Reader, error) {
	var h [fileHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("pcap: read file header: %w", err)
	}
	rd := &Reader{r: r}
	switch {
	case binary.LittleEndian.Uint32(h[:]) == MagicMicroseconds:
		rd.bo = binary.LittleEndian
	case binary.BigEndian.Uint32(h[:]) == MagicMicroseconds:
		rd.bo = binary.BigEndian
	case binary.LittleEndian.Uint32(h[:]) == MagicNanoseconds:
		rd.bo, rd.nanos = binary.LittleEndian, true
	case binary.BigEndian.Uint32(h[:]) == MagicNanoseconds:
		rd.bo, rd.nanos = binary.BigEndian, true
	case binary.LittleEndian.Uint32(h[:]) == ngSectionHeader:
		return newNGReader(r, h[:])
	default:
		return nil, fmt.Errorf("pcap: neither a pcap nor a pcapng file (magic % x)", h[:4])
	}
	if maj := rd.bo.Uint16(h[4:]); maj != versionMajor {
		return nil, fmt.Errorf("pcap: unsupported version %d.%d", maj, rd.bo.Uint16(h[6:]))
	}
	rd.SnapLen = rd.bo.Uint32(h[16:])
	rd.LinkType = rd.bo.Uint32(h[20:]) & 0x0fffffff // upper bits: FCS info
	return rd, nil
}

// Record is one captured packet.
type Record struct {
	Time    time.Time
	Data    []byte
	OrigLen int
}

// Next reads the next record; it returns io.EOF after the last one.
func (r *Reader) Next() (Record, error) {
	if r.ng != nil {
		return r.ngNext()
	}
	var h [recordHeaderLen]byte
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Record{}, fmt.Errorf("pcap: truncated record header: %w", err)
		}
		return Record{}, err
	}
	incl := r.bo.Uint32(h[8:])
	if incl > MaxSnapLen && incl > r.SnapLen {
		return Record{}, fmt.Errorf("pcap: record of %d bytes exceeds the snapshot length %d", incl, r.SnapLen)
	}
	data := make([]byte, incl)
	if _, err := io.ReadFull(r.r, data); err != nil {
		return Record{}, fmt.Errorf("pcap: truncated record data: %w", err)
	}
	sub := int64(r.bo.Uint32(h[4:]))
	if !r.nanos {
		sub *= 1000
	}
	return Record{
		Time:    time.Unix(int64(r.bo.Uint32(h[0:])), sub),
		Data:    data,
		OrigLen: int(r.bo.Uint32(h[12:])),
	}, nil
}
