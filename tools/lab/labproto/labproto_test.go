// Copyright 2026 The rdmago Authors.

package labproto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestFrames(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	noise := "\r\nSeaBIOS noise \x00RDMA"
	if err := w.WriteRaw([]byte(noise + Magic)); err != nil {
		t.Fatal(err)
	}
	w.Frame(Stdout, []byte("hello\n"))
	w.JSON(Exit, ExitMsg{Status: 3, Millis: 12})
	w.Frame(Quit, nil)
	raw := b.Bytes()
	if want := "O\x06\x00\x00\x00hello\n"; !bytes.Contains(raw, []byte(want)) {
		t.Errorf("stdout frame not encoded as %q in %q", want, raw)
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	skipped, err := SkipToMagic(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(skipped) != noise {
		t.Errorf("skipped %q, want %q", skipped, noise)
	}
	typ, p, err := ReadFrame(r)
	if err != nil || typ != Stdout || string(p) != "hello\n" {
		t.Errorf("frame 1: %q %q %v", typ, p, err)
	}
	typ, p, err = ReadFrame(r)
	var x ExitMsg
	if err != nil || typ != Exit || json.Unmarshal(p, &x) != nil || x.Status != 3 {
		t.Errorf("frame 2: %q %q %v", typ, p, err)
	}
	typ, p, err = ReadFrame(r)
	if err != nil || typ != Quit || len(p) != 0 {
		t.Errorf("frame 3: %q %q %v", typ, p, err)
	}
	if _, _, err := ReadFrame(r); err != io.EOF {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
}

func TestReadFrameBounds(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("O\xff\xff\xff\xff"))
	if _, _, err := ReadFrame(r); err == nil {
		t.Error("a 4 GiB frame was accepted")
	}
	r = bufio.NewReader(strings.NewReader("O\x05\x00\x00\x00abc"))
	if _, _, err := ReadFrame(r); err == nil {
		t.Error("a truncated frame was accepted")
	}
	if _, err := SkipToMagic(bufio.NewReader(strings.NewReader("no magic here"))); err == nil {
		t.Error("a stream without magic gave no error")
	}
	if err := NewWriter(io.Discard).Frame(Stdout, make([]byte, MaxPayload+1)); err == nil {
		t.Error("an oversized frame was written")
	}
}
