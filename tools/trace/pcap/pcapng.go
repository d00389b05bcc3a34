// Copyright 2026 The rdmago Authors.

package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"time"
)

// pcapng, the format of dumpcap and Wireshark's default "pcapng"
// (draft-ietf-opsawg-pcapng): the Reader reads it too. Blocks are read in
// order; Section Header Blocks set the byte order, Interface Description
// Blocks the link type, snapshot length and timestamp resolution of each
// interface, and Enhanced, Simple and (obsolete) Packet Blocks become
// Records. Other blocks are skipped.

// Block types.
const (
	ngSectionHeader   = 0x0a0d0d0a
	ngInterface       = 0x00000001
	ngObsoletePacket  = 0x00000002
	ngSimplePacket    = 0x00000003
	ngEnhancedPacket  = 0x00000006
	ngByteOrderMagic  = 0x1a2b3c4d
	ngMaxBlock        = 16 << 20 // larger blocks are refused
	ngOptEnd          = 0
	ngOptIfTsresol    = 9
	ngOptIfTsoffset   = 14
	ngSectionHdrFixed = 16 // byte-order magic, version, section length
)

// ngIface is what an Interface Description Block says.
type ngIface struct {
	linkType uint32
	snapLen  uint32
	units    uint64 // timestamp units per second
	offset   int64  // seconds added to every timestamp (if_tsoffset)
}

// ngState is the pcapng part of a Reader.
type ngState struct {
	ifaces []ngIface
}

// newNGReader continues NewReader for a pcapng file, whose first
// fileHeaderLen bytes (all of a minimal Section Header Block but its
// options and trailer) are in h. It reads up to the first Interface
// Description Block, which gives LinkType and SnapLen.
func newNGReader(r io.Reader, h []byte) (*Reader, error) {
	rd := &Reader{r: r, ng: &ngState{}}
	if err := rd.ngSection(h); err != nil {
		return nil, err
	}
	for len(rd.ng.ifaces) == 0 {
		typ, body, err := rd.ngBlock()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("pcap: pcapng file without an interface description")
			}
			return nil, err
		}
		switch typ {
		case ngInterface:
			if err := rd.ngInterface(body); err != nil {
				return nil, err
			}
		case ngEnhancedPacket, ngSimplePacket, ngObsoletePacket:
			return nil, fmt.Errorf("pcap: pcapng packet before any interface description")
		}
	}
	rd.LinkType, rd.SnapLen = rd.ng.ifaces[0].linkType, rd.ng.ifaces[0].snapLen
	return rd, nil
}

// ngSection starts a section from the first 24 bytes of its header block:
// the byte order, the version, and the rest of the block skipped.
func (r *Reader) ngSection(h []byte) error {
	switch {
	case binary.LittleEndian.Uint32(h[8:]) == ngByteOrderMagic:
		r.bo = binary.LittleEndian
	case binary.BigEndian.Uint32(h[8:]) == ngByteOrderMagic:
		r.bo = binary.BigEndian
	default:
		return fmt.Errorf("pcap: pcapng section header with byte-order magic % x", h[8:12])
	}
	if maj := r.bo.Uint16(h[12:]); maj != 1 {
		return fmt.Errorf("pcap: unsupported pcapng version %d.%d", maj, r.bo.Uint16(h[14:]))
	}
	n := r.bo.Uint32(h[4:])
	if n < fileHeaderLen+4 || n%4 != 0 || n > ngMaxBlock {
		return fmt.Errorf("pcap: pcapng section header of %d bytes", n)
	}
	if _, err := io.CopyN(io.Discard, r.r, int64(n-fileHeaderLen)); err != nil {
		return fmt.Errorf("pcap: truncated pcapng section header: %w", err)
	}
	r.ng.ifaces = r.ng.ifaces[:0]
	return nil
}

// ngBlock reads the next block: its type and its body (without the type,
// the two lengths and, for a section header, anything: ngSection has read
// it). It returns io.EOF at the end of the file.
func (r *Reader) ngBlock() (uint32, []byte, error) {
	var h [8]byte
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, fmt.Errorf("pcap: truncated pcapng block header: %w", err)
		}
		return 0, nil, err
	}
	if binary.LittleEndian.Uint32(h[:]) == ngSectionHeader { // the same in both orders
		sh := make([]byte, fileHeaderLen)
		copy(sh, h[:])
		if _, err := io.ReadFull(r.r, sh[8:]); err != nil {
			return 0, nil, fmt.Errorf("pcap: truncated pcapng section header: %w", err)
		}
		return ngSectionHeader, nil, r.ngSection(sh)
	}
	typ, n := r.bo.Uint32(h[:]), r.bo.Uint32(h[4:])
	if n < 12 || n%4 != 0 || n > ngMaxBlock {
		return 0, nil, fmt.Errorf("pcap: pcapng block %#x of %d bytes", typ, n)
	}
	b := make([]byte, n-8)
	if _, err := io.ReadFull(r.r, b); err != nil {
		return 0, nil, fmt.Errorf("pcap: truncated pcapng block %#x: %w", typ, err)
	}
	if r.bo.Uint32(b[len(b)-4:]) != n {
		return 0, nil, fmt.Errorf("pcap: pcapng block %#x: trailing length %d, leading %d", typ, r.bo.Uint32(b[len(b)-4:]), n)
	}
	return typ, b[:len(b)-4], nil
}

// ngInterface adds the interface an Interface Description Block describes.
func (r *Reader) ngInterface(b []byte) error {
	if len(b) < 8 {
		return fmt.Errorf("pcap: pcapng interface description of %d bytes", len(b))
	}
	ifc := ngIface{linkType: uint32(r.bo.Uint16(b)), snapLen: r.bo.Uint32(b[4:]), units: 1e6}
	for opts := b[8:]; len(opts) >= 4; {
		code, l := r.bo.Uint16(opts), int(r.bo.Uint16(opts[2:]))
		if code == ngOptEnd || 4+l > len(opts) {
			break
		}
		v := opts[4 : 4+l]
		switch {
		case code == ngOptIfTsresol && l == 1:
			exp := uint64(v[0] & 0x7f)
			base := uint64(10)
			if v[0]&0x80 != 0 {
				base = 2
			}
			if (base == 10 && exp > 19) || (base == 2 && exp > 63) {
				return fmt.Errorf("pcap: pcapng timestamp resolution %#x out of range", v[0])
			}
			ifc.units = 1
			for range exp {
				ifc.units *= base
			}
		case code == ngOptIfTsoffset && l == 8:
			ifc.offset = int64(r.bo.Uint64(v))
		}
		opts = opts[4+(l+3)&^3:]
	}
	r.ng.ifaces = append(r.ng.ifaces, ifc)
	return nil
}

// time converts a 64-bit timestamp in the interface's units.
func (ifc ngIface) time(ts uint64) time.Time {
	sec, frac := ts/ifc.units, ts%ifc.units
	hi, lo := bits.Mul64(frac, 1e9)
	ns, _ := bits.Div64(hi, lo, ifc.units) // frac < units: no overflow
	return time.Unix(int64(sec)+ifc.offset, int64(ns))
}

// ngNext reads blocks until the next packet.
func (r *Reader) ngNext() (Record, error) {
	for {
		typ, b, err := r.ngBlock()
		if err != nil {
			return Record{}, err
		}
		switch typ {
		case ngInterface:
			if err := r.ngInterface(b); err != nil {
				return Record{}, err
			}
			continue
		case ngEnhancedPacket, ngObsoletePacket:
			if len(b) < 20 {
				return Record{}, fmt.Errorf("pcap: pcapng packet block of %d bytes", len(b))
			}
			var id uint32
			if typ == ngEnhancedPacket {
				id = r.bo.Uint32(b)
			} else {
				id = uint32(r.bo.Uint16(b))
			}
			if int(id) >= len(r.ng.ifaces) {
				return Record{}, fmt.Errorf("pcap: pcapng packet of undescribed interface %d", id)
			}
			ifc := r.ng.ifaces[id]
			capLen, origLen := r.bo.Uint32(b[12:]), r.bo.Uint32(b[16:])
			if uint64(capLen) > uint64(len(b)-20) {
				return Record{}, fmt.Errorf("pcap: pcapng packet of %d bytes in a block of %d", capLen, len(b))
			}
			if ifc.linkType != r.LinkType {
				return Record{}, fmt.Errorf("pcap: pcapng interface %d has link type %d, the first %d", id, ifc.linkType, r.LinkType)
			}
			ts := uint64(r.bo.Uint32(b[4:]))<<32 | uint64(r.bo.Uint32(b[8:]))
			return Record{Time: ifc.time(ts), Data: b[20 : 20+capLen], OrigLen: int(origLen)}, nil
		case ngSimplePacket:
			if len(b) < 4 || len(r.ng.ifaces) == 0 {
				return Record{}, fmt.Errorf("pcap: pcapng simple packet block of %d bytes", len(b))
			}
			origLen := r.bo.Uint32(b)
			capLen := min(origLen, uint32(len(b)-4))
			if sl := r.ng.ifaces[0].snapLen; sl != 0 {
				capLen = min(capLen, sl)
			}
			return Record{Data: b[4 : 4+capLen], OrigLen: int(origLen)}, nil
		}
	}
}
