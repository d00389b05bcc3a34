package transfer

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawPeer speaks the protocol by hand to a Receiver, to send it what a
// correct sender never would.
type rawPeer struct {
	t   *testing.T
	tr  *MemTransport
	ctx context.Context
}

func (p *rawPeer) sendRaw(b []byte) error { return p.tr.Send(p.ctx, b) }

func (p *rawPeer) send(m Message) error {
	b, err := Encode(m)
	if err != nil {
		p.t.Fatalf("encode %v: %v", m.Type(), err)
	}
	return p.tr.Send(p.ctx, b)
}

// imm queues the notice of a write that carried no data: what a
// misbehaving peer's write looks like to the receiver's loop.
func (p *rawPeer) imm(imm uint32, n int) error {
	return p.tr.push(p.ctx, memItem{write: true, imm: imm, n: n})
}

func (p *rawPeer) recv() (Message, error) {
	a, err := p.tr.Receive(p.ctx)
	if err != nil {
		return nil, err
	}
	if a.Write {
		p.t.Fatalf("receiver wrote to the sender")
	}
	return Decode(a.Msg)
}

func (p *rawPeer) expect(want MsgType) Message {
	p.t.Helper()
	m, err := p.recv()
	if err != nil {
		p.t.Fatalf("waiting for %v: %v", want, err)
	}
	if m.Type() != want {
		p.t.Fatalf("got %v (%+v), want %v", m.Type(), m, want)
	}
	return m
}

func (p *rawPeer) hello() *Hello {
	p.t.Helper()
	p.send(&Hello{Role: RoleSender, MinVersion: 1, MaxVersion: 1})
	return p.expect(MsgHello).(*Hello)
}

// startFile announces a file and returns the window (nil when there is no
// data).
func (p *rawPeer) startFile(id uint32, name string, size uint64) *Window {
	p.t.Helper()
	p.send(&File{ID: id, Kind: KindFile, Mode: 0o644, Size: size, Name: name})
	p.expect(MsgResumeOffset)
	if size == 0 {
		return nil
	}
	return p.expect(MsgWindow).(*Window)
}

// errorMsg reads until the receiver's ERROR and returns it.
func (p *rawPeer) errorMsg() *ErrorMsg {
	p.t.Helper()
	for range 100 {
		m, err := p.recv()
		if err != nil {
			p.t.Fatalf("no ERROR before the connection ended: %v", err)
		}
		if e, ok := m.(*ErrorMsg); ok {
			return e
		}
	}
	p.t.Fatal("no ERROR")
	return nil
}

func header(typ MsgType, length uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, Magic)
	b = binary.BigEndian.AppendUint16(b, WireVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(typ))
	return binary.BigEndian.AppendUint32(b, length)
}

func enc(t *testing.T, m Message) []byte {
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMalformedRejected sends one bad thing per connection to a serving
// Receiver: each is answered with ERROR saying what was wrong, the
// connection ends, nothing is written, and the receiver keeps serving.
func TestMalformedRejected(t *testing.T) {
	dst := t.TempDir()
	r := smallReceiver(dst)
	ln := NewMemListener()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var connErrs []error
	served := make(chan struct{})
	go func() {
		defer close(served)
		r.Serve(ctx, ln, func(_ *ConnReport, err error) {
			mu.Lock()
			connErrs = append(connErrs, err)
			mu.Unlock()
		})
	}()

	type step func(p *rawPeer)
	hello := func(p *rawPeer) { p.hello() }
	raw := func(b []byte) step { return func(p *rawPeer) { p.sendRaw(b) } }
	msg := func(m Message) step { return func(p *rawPeer) { p.send(m) } }
	window := func(p *rawPeer) { p.startFile(1, "f", 3*tSlotSize) }
	goodHello := enc(t, &Hello{Role: RoleSender, MinVersion: 1, MaxVersion: 1})
	cases := []struct {
		name  string
		steps []step
		code  Code
		text  string
	}{
		{"empty message", []step{raw(nil)}, CodeProtocol, "shorter than the 12-byte header"},
		{"bad magic", []step{raw(append([]byte("XXXX"), goodHello[4:]...))}, CodeProtocol, "bad magic"},
		{"wire version 2", []step{raw(func() []byte { b := append([]byte{}, goodHello...); b[5] = 2; return b }())}, CodeVersion, "wire format version 2"},
		{"oversized length", []step{raw(append(header(MsgHello, 5000), make([]byte, 100)...))}, CodeProtocol, "exceeds"},
		{"truncated payload", []step{raw(goodHello[:30])}, CodeProtocol, "announces 48 payload bytes, got 18"},
		{"trailing bytes", []step{raw(append(header(MsgHello, 49), append(goodHello[12:], 0)...))}, CodeProtocol, "payload is 49 bytes, want 48"},
		{"unknown type", []step{raw(header(99, 0))}, CodeProtocol, "unknown type 99"},
		{"FILE before HELLO", []step{msg(&File{ID: 1, Kind: KindDir, Name: "d"})}, CodeProtocol, "unexpected FILE before HELLO"},
		{"data before HELLO", []step{func(p *rawPeer) { p.imm(0, 10) }}, CodeProtocol, "unexpected data write before HELLO"},
		{"HELLO from a receiver", []step{msg(&Hello{Role: RoleReceiver, MinVersion: 1, MaxVersion: 1})}, CodeProtocol, "HELLO from a receiver"},
		{"no common version", []step{msg(&Hello{Role: RoleSender, MinVersion: 2, MaxVersion: 5})}, CodeVersion, "versions 2..5"},
		{"HELLO reserved bits", []step{raw(func() []byte { b := append([]byte{}, goodHello...); b[HeaderSize+7] = 1; return b }())}, CodeProtocol, "reserved field"},
		{"second HELLO", []step{hello, raw(goodHello)}, CodeProtocol, "unexpected HELLO while waiting for FILE or BYE"},
		{"AUTH unasked", []step{hello, msg(&Auth{})}, CodeProtocol, "unexpected AUTH"},
		{"WINDOW from the sender", []step{hello, msg(&Window{ID: 1, Slots: 1, SlotSize: 1})}, CodeProtocol, "unexpected WINDOW"},
		{"CREDIT from the sender", []step{hello, msg(&Credit{ID: 1, Consumed: 1})}, CodeProtocol, "unexpected CREDIT"},
		{"DONE outside a transfer", []step{hello, msg(&Done{ID: 1})}, CodeProtocol, "unexpected DONE"},
		{"RESULT from the sender", []step{hello, msg(&Result{ID: 1})}, CodeProtocol, "unexpected RESULT"},
		{"data outside a transfer", []step{hello, func(p *rawPeer) { p.imm(0, 1) }}, CodeProtocol, "unexpected data write while waiting for FILE"},
		{"parent traversal", []step{hello, msg(&File{ID: 1, Kind: KindFile, Name: "../escape"})}, CodeProtocol, `".." component`},
		{"inner traversal", []step{hello, msg(&File{ID: 1, Kind: KindFile, Name: "a/../../escape"})}, CodeProtocol, `".." component`},
		{"absolute name", []step{hello, msg(&File{ID: 1, Kind: KindFile, Name: "/etc/passwd"})}, CodeProtocol, "is absolute"},
		{"NUL in name", []step{hello, msg(&File{ID: 1, Kind: KindFile, Name: "a\x00b"})}, CodeProtocol, "control character"},
		{"partial-suffix name", []step{hello, msg(&File{ID: 1, Kind: KindFile, Name: ".x" + PartialSuffix})}, CodeProtocol, "reserved for partial"},
		{"empty component", []step{hello, msg(&File{ID: 1, Kind: KindFile, Name: "a//b"})}, CodeProtocol, "empty component"},
		{"oversized name", []step{hello, raw(func() []byte {
			b := enc(t, &File{ID: 1, Kind: KindFile, Name: "n"})
			b = append(b, strings.Repeat("n", MaxNameLen)...)
			binary.BigEndian.PutUint32(b[8:], uint32(len(b)-HeaderSize))
			binary.BigEndian.PutUint16(b[HeaderSize+6:], uint16(MaxNameLen+1))
			return b
		}())}, CodeProtocol, "exceeds 1024"},
		{"transfer id 0", []step{hello, msg(&File{ID: 0, Kind: KindFile, Name: "f"})}, CodeProtocol, "transfer id 0"},
		{"mode with type bits", []step{hello, msg(&File{ID: 1, Kind: KindFile, Mode: 0o170644, Name: "f"})}, CodeProtocol, "bits other than permissions"},
		{"directory with a size", []step{hello, msg(&File{ID: 1, Kind: KindDir, Size: 5, Name: "d"})}, CodeProtocol, "directory with a size"},
		{"ids must increase", []step{hello, func(p *rawPeer) {
			p.send(&File{ID: 7, Kind: KindDir, Mode: 0o755, Name: "d"})
			p.expect(MsgResult)
			p.send(&File{ID: 7, Kind: KindDir, Mode: 0o755, Name: "e"})
		}}, CodeProtocol, "ids must increase"},
		{"write to the wrong slot", []step{hello, window, func(p *rawPeer) { p.imm(EncodeImm(1, 0), tSlotSize) }}, CodeProtocol, "expected slot 0 sequence 0"},
		{"write with a wrong length", []step{hello, window, func(p *rawPeer) { p.imm(EncodeImm(0, 0), 10) }}, CodeProtocol, "of 10 bytes for chunk 0, expected 4096"},
		{"too many writes", []step{hello, window, func(p *rawPeer) {
			for i := range 4 {
				p.imm(EncodeImm(i%3, uint64(i)), tSlotSize)
			}
		}}, CodeProtocol, "beyond the 3 chunks"},
		{"DONE short of chunks", []step{hello, window, func(p *rawPeer) {
			p.imm(EncodeImm(0, 0), tSlotSize)
			p.send(&Done{ID: 1, Chunks: 1})
		}}, CodeProtocol, "1 arrived, 3 expected"},
		{"DONE of another transfer", []step{hello, window, msg(&Done{ID: 2})}, CodeProtocol, "unexpected DONE during the data of transfer 1"},
		{"FILE during data", []step{hello, window, msg(&File{ID: 2, Kind: KindDir, Name: "d"})}, CodeProtocol, "unexpected FILE during the data"},
		{"BYE during data", []step{hello, window, msg(&Bye{})}, CodeProtocol, "unexpected BYE during the data"},
		{"RESUME-OFFSET unconfirmed", []step{hello, func(p *rawPeer) {
			os.WriteFile(filepath.Join(dst, PartialName("r")), []byte("abc"), 0o600)
			p.send(&File{ID: 1, Kind: KindFile, Flags: FileResume, Mode: 0o644, Size: 10, Name: "r"})
			p.expect(MsgResumeOffset)
			p.send(&ResumeOffset{ID: 1, Offset: 2})
		}}, CodeProtocol, "does not confirm the offered 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := ln.Dial(ctx, MemConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			p := &rawPeer{t: t, tr: tr, ctx: ctx}
			for _, s := range tc.steps {
				s(p)
			}
			e := p.errorMsg()
			if e.Code != tc.code || !strings.Contains(e.Text, tc.text) {
				t.Errorf("ERROR %v %q, want %v containing %q", e.Code, e.Text, tc.code, tc.text)
			}
			if _, err := p.recv(); !errors.Is(err, ErrPeerGone) {
				t.Errorf("connection not ended after ERROR: %v", err)
			}
		})
	}

	// Nothing arrived anywhere, and the receiver still serves.
	entries, _ := os.ReadDir(dst)
	for _, e := range entries {
		if e.Name() != PartialName("f") && e.Name() != PartialName("r") && e.Name() != "d" {
			t.Errorf("unexpected %s in the destination", e.Name())
		}
	}
	src := tree(t, t.TempDir(), map[string][]byte{"good": randBytes(20, 3*tSlotSize)})
	tr, err := ln.Dial(ctx, MemConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&Sender{}).Send(ctx, tr, plan(t, filepath.Join(src, "good")))
	tr.Close()
	if err != nil {
		t.Fatalf("after %d bad connections: %v", len(cases), err)
	}
	allVerified(t, rep, 1)
	ln.Close()
	cancel()
	<-served
	mu.Lock()
	defer mu.Unlock()
	if len(connErrs) != len(cases)+1 {
		t.Fatalf("%d connections reported, want %d", len(connErrs), len(cases)+1)
	}
	bad := 0
	for _, err := range connErrs {
		if err != nil {
			bad++
		}
	}
	if bad != len(cases) {
		t.Errorf("%d connections failed, want %d", bad, len(cases))
	}
}
