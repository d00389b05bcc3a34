// Copyright 2026 The rdmago Authors.

package lab

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// File modes used in the initramfs (the S_IF* bits of st_mode).
const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
)

// CPIOWriter writes a "newc" cpio archive, the format the kernel unpacks into
// its initramfs (Documentation/driver-api/early-userspace/buffer-format.rst).
// Every entry gets uid/gid 0 and mtime 0 so archives are reproducible.
type CPIOWriter struct {
	w   io.Writer
	ino uint32
	n   int64
	err error
}

// NewCPIOWriter returns a writer appending to w.
func NewCPIOWriter(w io.Writer) *CPIOWriter { return &CPIOWriter{w: w, ino: 1} }

func (c *CPIOWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *CPIOWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *CPIOWriter) entry(name string, mode uint32, data []byte) error {
	return c.entryDev(name, mode, data, 0, 0)
}

func (c *CPIOWriter) entryDev(name string, mode uint32, data []byte, rmajor, rminor uint32) error {
	if name == "" {
		return errors.New("cpio: empty name")
	}
	var hdr bytes.Buffer
	hdr.WriteString("070701")
	nlink := uint32(1)
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	ino := c.ino
	c.ino++
	if name == "TRAILER!!!" {
		ino = 0
		nlink = 1
	}
	for _, v := range []uint32{
		ino, mode, 0, 0, nlink, 0, // ino, mode, uid, gid, nlink, mtime
		uint32(len(data)), 0, 0, rmajor, rminor, // filesize, devmajor, devminor, rdevmajor, rdevminor
		uint32(len(name) + 1), 0, // namesize, check
	} {
		fmt.Fprintf(&hdr, "%08x", v)
	}
	hdr.WriteString(name)
	hdr.WriteByte(0)
	c.write(hdr.Bytes())
	c.pad()
	c.write(data)
	c.pad()
	return c.err
}

// Dir adds a directory with permission bits perm.
func (c *CPIOWriter) Dir(name string, perm uint32) error {
	return c.entry(name, modeDir|perm&0o7777, nil)
}

// File adds a regular file.
func (c *CPIOWriter) File(name string, perm uint32, data []byte) error {
	return c.entry(name, modeRegular|perm&0o7777, data)
}

// Symlink adds a symbolic link name pointing to target.
func (c *CPIOWriter) Symlink(name, target string) error {
	return c.entry(name, modeSymlink|0o777, []byte(target))
}

// CharDev adds a character device node (e.g. /dev/console, 5:1).
func (c *CPIOWriter) CharDev(name string, perm, major, minor uint32) error {
	return c.entryDev(name, modeCharDev|perm&0o7777, nil, major, minor)
}

// Close writes the trailer. It does not close the underlying writer.
func (c *CPIOWriter) Close() error {
	return c.entry("TRAILER!!!", 0, nil)
}

// CPIOEntry is one entry read back by ReadCPIO.
type CPIOEntry struct {
	Name string
	Mode uint32
	Data []byte
}

// ReadCPIO parses a newc archive up to its trailer (used by tests and by
// `rdmalab` diagnostics).
func ReadCPIO(b []byte) ([]CPIOEntry, error) {
	var out []CPIOEntry
	off := 0
	field := func(i int) (uint32, error) {
		s := string(b[off+6+8*i : off+6+8*i+8])
		v, err := strconv.ParseUint(s, 16, 32)
		return uint32(v), err
	}
	for {
		if off+110 > len(b) {
			return nil, fmt.Errorf("cpio: truncated header at offset %d", off)
		}
		if string(b[off:off+6]) != "070701" {
			return nil, fmt.Errorf("cpio: bad magic %q at offset %d", b[off:off+6], off)
		}
		mode, err1 := field(1)
		size, err2 := field(6)
		nameSize, err3 := field(11)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("cpio: header at offset %d: %w", off, err)
		}
		nameStart := off + 110
		nameEnd := nameStart + int(nameSize)
		if nameSize == 0 || nameEnd > len(b) {
			return nil, fmt.Errorf("cpio: bad name size %d at offset %d", nameSize, off)
		}
		name := string(b[nameStart : nameEnd-1])
		dataStart := (nameEnd + 3) &^ 3
		dataEnd := dataStart + int(size)
		if dataEnd > len(b) {
			return nil, fmt.Errorf("cpio: %s: truncated data", name)
		}
		if name == "TRAILER!!!" {
			return out, nil
		}
		out = append(out, CPIOEntry{Name: name, Mode: mode, Data: b[dataStart:dataEnd]})
		off = (dataEnd + 3) &^ 3
	}
}
