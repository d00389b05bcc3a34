// Copyright 2026 The rdmago Authors.

package lab

import (
	"bytes"
	"strings"
	"testing"
)

func TestCPIOGolden(t *testing.T) {
	var b bytes.Buffer
	w := NewCPIOWriter(&b)
	if err := w.File("a", 0o644, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// newc: "070701", 13 eight-digit hex fields (ino mode uid gid nlink mtime
	// filesize devmajor devminor rdevmajor rdevminor namesize check), the
	// NUL-terminated name, padding to 4, the data, padding to 4.
	want := "070701" + "00000001" + "000081a4" + "00000000" + "00000000" + "00000001" + "00000000" +
		"00000002" + "00000000" + "00000000" + "00000000" + "00000000" + "00000002" + "00000000" +
		"a\x00" + "hi\x00\x00" +
		"070701" + "00000000" + "00000000" + "00000000" + "00000000" + "00000001" + "00000000" +
		"00000000" + "00000000" + "00000000" + "00000000" + "00000000" + "0000000b" + "00000000" +
		"TRAILER!!!\x00" + "\x00\x00\x00"
	if b.String() != want {
		t.Errorf("archive\n got %q\nwant %q", b.String(), want)
	}
	if b.Len()%4 != 0 {
		t.Errorf("archive length %d is not a multiple of 4", b.Len())
	}
}

func TestCPIORoundTrip(t *testing.T) {
	var b bytes.Buffer
	w := NewCPIOWriter(&b)
	big := []byte(strings.Repeat("x", 1001))
	steps := []error{
		w.Dir("dev", 0o755),
		w.CharDev("dev/console", 0o600, 5, 1),
		w.File("init", 0o755, big),
		w.Symlink("bin", "host/usr/bin"),
		w.File("lib/modules/rdmalab/order", 0o644, []byte("a.ko\nb.ko\n")),
		w.File("empty", 0o644, nil),
		w.Close(),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	es, err := ReadCPIO(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	type ent struct {
		name string
		mode uint32
		data string
	}
	want := []ent{
		{"dev", 0o040755, ""},
		{"dev/console", 0o020600, ""},
		{"init", 0o100755, string(big)},
		{"bin", 0o120777, "host/usr/bin"},
		{"lib/modules/rdmalab/order", 0o100644, "a.ko\nb.ko\n"},
		{"empty", 0o100644, ""},
	}
	if len(es) != len(want) {
		t.Fatalf("%d entries back, want %d", len(es), len(want))
	}
	for i, e := range es {
		if e.Name != want[i].name || e.Mode != want[i].mode || string(e.Data) != want[i].data {
			t.Errorf("entry %d = %q %o (%d bytes), want %q %o (%d bytes)", i, e.Name, e.Mode, len(e.Data), want[i].name, want[i].mode, len(want[i].data))
		}
	}
	// The device numbers of dev/console are in the rdev fields.
	hdr := b.Bytes()[116:] // after "dev": 110-byte header + "dev\x00"
	if !bytes.HasPrefix(hdr, []byte("070701")) || string(hdr[6+8*9:6+8*11]) != "0000000500000001" {
		t.Errorf("dev/console header %q lacks rdev 5:1", hdr[:110])
	}
	if _, err := ReadCPIO(b.Bytes()[:200]); err == nil {
		t.Error("a truncated archive was read without error")
	}
	if err := NewCPIOWriter(&b).File("", 0, nil); err == nil {
		t.Error("an empty name was accepted")
	}
}

func TestWriteInitramfs(t *testing.T) {
	var b bytes.Buffer
	mods := []*Module{{Name: "crc32_generic", Data: []byte("A")}, {Name: "rdma_rxe", Data: []byte("B")}}
	if err := writeInitramfs(&b, []byte("INIT"), mods); err != nil {
		t.Fatal(err)
	}
	es, err := ReadCPIO(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]CPIOEntry{}
	for _, e := range es {
		files[e.Name] = e
	}
	if e := files["init"]; string(e.Data) != "INIT" || e.Mode != 0o100755 {
		t.Errorf("init = %q mode %o", e.Data, e.Mode)
	}
	if got := string(files["lib/modules/rdmalab/order"].Data); got != "crc32_generic.ko\nrdma_rxe.ko\n" {
		t.Errorf("order = %q", got)
	}
	for _, d := range []string{"dev", "proc", "sys", "tmp", "host", "lib/modules/rdmalab/rdma_rxe.ko", "dev/console"} {
		if _, ok := files[d]; !ok {
			t.Errorf("initramfs lacks %s", d)
		}
	}
}
