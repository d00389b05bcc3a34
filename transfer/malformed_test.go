package transfer_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// rawPeer speaks the protocol by hand to a Receiver, to send it what a
// correct sender never would.
type rawPeer struct {
	t   *testing.T
	tr  *transfertest.Transport
	ctx context.Context
}

func (p *rawPeer) sendRaw(b []byte) error { return p.tr.Send(p.ctx, b) }

func (p *rawPeer) send(m rdcp.Message) error {
	b, err := rdcp.Encode(m)
	if err != nil {
		p.t.Fatalf("encode %v: %v", m.Type(), err)
	}
	return p.tr.Send(p.ctx, b)
}

// imm queues the notice of a write that carried no data: what a
// misbehaving peer's write looks like to the receiver's loop.
func (p *rawPeer) imm(imm uint32, n int) error {
	return p.tr.InjectWrite(p.ctx, imm, n)
}

func (p *rawPeer) recv() (rdcp.Message, error) {
	a, err := p.tr.Receive(p.ctx)
	if err != nil {
		return nil, err
	}
	if a.Write {
		p.t.Fatalf("receiver wrote to the sender")
	}
	return rdcp.Decode(a.Msg)
}

func (p *rawPeer) expect(want rdcp.MsgType) rdcp.Message {
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

func (p *rawPeer) hello() *rdcp.Hello {
	p.t.Helper()
	p.send(&rdcp.Hello{Role: rdcp.RoleSender, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion})
	return p.expect(rdcp.MsgHello).(*rdcp.Hello)
}

// startFile announces a file and returns the window (nil when there is no
// data).
func (p *rawPeer) startFile(id uint32, name string, size uint64) *rdcp.Window {
	p.t.Helper()
	p.send(&rdcp.File{ID: id, Kind: rdcp.KindFile, Mode: 0o644, Size: size, Name: name})
	p.expect(rdcp.MsgResumeOffset)
	if size == 0 {
		return nil
	}
	return p.expect(rdcp.MsgWindow).(*rdcp.Window)
}

// errorMsg reads until the receiver's ERROR and returns it.
func (p *rawPeer) errorMsg() *rdcp.ErrorMsg {
	p.t.Helper()
	for range 100 {
		m, err := p.recv()
		if err != nil {
			p.t.Fatalf("no ERROR before the connection ended: %v", err)
		}
		if e, ok := m.(*rdcp.ErrorMsg); ok {
			return e
		}
	}
	p.t.Fatal("no ERROR")
	return nil
}

// tChunkWrite is the length of a write of tSlotSize bytes of data: with
// its CRC32C (the receiver's default verification).
const tChunkWrite = tSlotSize + rdcp.ChunkCRCSize

func header(typ rdcp.MsgType, length uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, rdcp.Magic)
	b = binary.BigEndian.AppendUint16(b, rdcp.WireVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(typ))
	return binary.BigEndian.AppendUint32(b, length)
}

func enc(t *testing.T, m rdcp.Message) []byte {
	b, err := rdcp.Encode(m)
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
	ln := transfertest.NewListener()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var connErrs []error
	served := make(chan struct{})
	go func() {
		defer close(served)
		r.Serve(ctx, ln, func(_ *transfer.ConnReport, err error) {
			mu.Lock()
			connErrs = append(connErrs, err)
			mu.Unlock()
		})
	}()

	type step func(p *rawPeer)
	hello := func(p *rawPeer) { p.hello() }
	raw := func(b []byte) step { return func(p *rawPeer) { p.sendRaw(b) } }
	msg := func(m rdcp.Message) step { return func(p *rawPeer) { p.send(m) } }
	window := func(p *rawPeer) { p.startFile(1, "f", 3*tSlotSize) }
	goodHello := enc(t, &rdcp.Hello{Role: rdcp.RoleSender, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion})
	cases := []struct {
		name  string
		steps []step
		code  transfer.Code
		text  string
	}{
		{"empty message", []step{raw(nil)}, transfer.CodeProtocol, "shorter than the 12-byte header"},
		{"bad magic", []step{raw(append([]byte("XXXX"), goodHello[4:]...))}, transfer.CodeProtocol, "bad magic"},
		{"wire version 2", []step{raw(func() []byte { b := append([]byte{}, goodHello...); b[5] = 2; return b }())}, transfer.CodeVersion, "wire format version 2"},
		{"oversized length", []step{raw(append(header(rdcp.MsgHello, 5000), make([]byte, 100)...))}, transfer.CodeProtocol, "exceeds"},
		{"truncated payload", []step{raw(goodHello[:30])}, transfer.CodeProtocol, "announces 48 payload bytes, got 18"},
		{"trailing bytes", []step{raw(append(header(rdcp.MsgHello, 49), append(goodHello[12:], 0)...))}, transfer.CodeProtocol, "payload is 49 bytes, want 48"},
		{"unknown type", []step{raw(header(99, 0))}, transfer.CodeProtocol, "unknown type 99"},
		{"FILE before HELLO", []step{msg(&rdcp.File{ID: 1, Kind: rdcp.KindDir, Name: "d"})}, transfer.CodeProtocol, "unexpected FILE before HELLO"},
		{"data before HELLO", []step{func(p *rawPeer) { p.imm(0, 10) }}, transfer.CodeProtocol, "unexpected data write before HELLO"},
		{"HELLO from a receiver", []step{msg(&rdcp.Hello{Role: rdcp.RoleReceiver, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion})}, transfer.CodeProtocol, "HELLO from a receiver"},
		{"no common version", []step{msg(&rdcp.Hello{Role: rdcp.RoleSender, MinVersion: rdcp.ProtocolVersion + 1, MaxVersion: rdcp.ProtocolVersion + 3})}, transfer.CodeVersion,
			fmt.Sprintf("versions %d..%d", rdcp.ProtocolVersion+1, rdcp.ProtocolVersion+3)},
		{"version 1 sender (no session MAC)", []step{msg(&rdcp.Hello{Role: rdcp.RoleSender, MinVersion: 1, MaxVersion: 1})}, transfer.CodeVersion, "use matching rdmacp versions"},
		{"HELLO reserved bits", []step{raw(func() []byte { b := append([]byte{}, goodHello...); b[rdcp.HeaderSize+7] = 1; return b }())}, transfer.CodeProtocol, "reserved field"},
		{"second HELLO", []step{hello, raw(goodHello)}, transfer.CodeProtocol, "unexpected HELLO while waiting for FILE or BYE"},
		{"AUTH unasked", []step{hello, msg(&rdcp.Auth{})}, transfer.CodeProtocol, "unexpected AUTH"},
		{"WINDOW from the sender", []step{hello, msg(&rdcp.Window{ID: 1, Slots: 1, SlotSize: 1})}, transfer.CodeProtocol, "unexpected WINDOW"},
		{"CREDIT from the sender", []step{hello, msg(&rdcp.Credit{ID: 1, Consumed: 1})}, transfer.CodeProtocol, "unexpected CREDIT"},
		{"DONE outside a transfer", []step{hello, msg(&rdcp.Done{ID: 1})}, transfer.CodeProtocol, "unexpected DONE"},
		{"RESULT from the sender", []step{hello, msg(&rdcp.Result{ID: 1})}, transfer.CodeProtocol, "unexpected RESULT"},
		{"data outside a transfer", []step{hello, func(p *rawPeer) { p.imm(0, 1) }}, transfer.CodeProtocol, "unexpected data write while waiting for FILE"},
		{"parent traversal", []step{hello, msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Name: "../escape"})}, transfer.CodeProtocol, `".." component`},
		{"inner traversal", []step{hello, msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Name: "a/../../escape"})}, transfer.CodeProtocol, `".." component`},
		{"absolute name", []step{hello, msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Name: "/etc/passwd"})}, transfer.CodeProtocol, "is absolute"},
		{"NUL in name", []step{hello, msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Name: "a\x00b"})}, transfer.CodeProtocol, "control character"},
		{"partial-suffix name", []step{hello, msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Name: ".x" + rdcp.PartialSuffix})}, transfer.CodeProtocol, "reserved for partial"},
		{"empty component", []step{hello, msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Name: "a//b"})}, transfer.CodeProtocol, "empty component"},
		{"oversized name", []step{hello, raw(func() []byte {
			b := enc(t, &rdcp.File{ID: 1, Kind: rdcp.KindFile, Name: "n"})
			b = append(b, strings.Repeat("n", rdcp.MaxNameLen)...)
			binary.BigEndian.PutUint32(b[8:], uint32(len(b)-rdcp.HeaderSize))
			binary.BigEndian.PutUint16(b[rdcp.HeaderSize+6:], uint16(rdcp.MaxNameLen+1))
			return b
		}())}, transfer.CodeProtocol, "exceeds 1024"},
		{"transfer id 0", []step{hello, msg(&rdcp.File{ID: 0, Kind: rdcp.KindFile, Name: "f"})}, transfer.CodeProtocol, "transfer id 0"},
		{"mode with type bits", []step{hello, msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Mode: 0o170644, Name: "f"})}, transfer.CodeProtocol, "bits other than permissions"},
		{"directory with a size", []step{hello, msg(&rdcp.File{ID: 1, Kind: rdcp.KindDir, Size: 5, Name: "d"})}, transfer.CodeProtocol, "directory with a size"},
		{"ids must increase", []step{hello, func(p *rawPeer) {
			p.send(&rdcp.File{ID: 7, Kind: rdcp.KindDir, Mode: 0o755, Name: "d"})
			p.expect(rdcp.MsgResult)
			p.send(&rdcp.File{ID: 7, Kind: rdcp.KindDir, Mode: 0o755, Name: "e"})
		}}, transfer.CodeProtocol, "ids must increase"},
		{"write to the wrong slot", []step{hello, window, func(p *rawPeer) { p.imm(rdcp.EncodeImm(1, 0), tSlotSize) }}, transfer.CodeProtocol, "expected slot 0 sequence 0"},
		{"write with a wrong length", []step{hello, window, func(p *rawPeer) { p.imm(rdcp.EncodeImm(0, 0), 10) }}, transfer.CodeProtocol, "of 10 bytes for chunk 0, expected 4096"},
		{"too many writes", []step{hello, window, func(p *rawPeer) {
			for i := range 4 {
				p.imm(rdcp.EncodeImm(i%3, uint64(i)), tChunkWrite)
			}
		}}, transfer.CodeProtocol, "beyond the 3 chunks"},
		{"DONE short of chunks", []step{hello, window, func(p *rawPeer) {
			p.imm(rdcp.EncodeImm(0, 0), tChunkWrite)
			p.send(&rdcp.Done{ID: 1, Chunks: 1})
		}}, transfer.CodeProtocol, "1 arrived, 3 expected"},
		{"DONE of another transfer", []step{hello, window, msg(&rdcp.Done{ID: 2})}, transfer.CodeProtocol, "unexpected DONE during the data of transfer 1"},
		{"FILE during data", []step{hello, window, msg(&rdcp.File{ID: 2, Kind: rdcp.KindDir, Name: "d"})}, transfer.CodeProtocol, "unexpected FILE during the data"},
		{"BYE during data", []step{hello, window, msg(&rdcp.Bye{})}, transfer.CodeProtocol, "unexpected BYE during the data"},
		{"RESUME-OFFSET unconfirmed", []step{hello, func(p *rawPeer) {
			os.WriteFile(filepath.Join(dst, rdcp.PartialName("r")), []byte("abc"), 0o600)
			p.send(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Flags: rdcp.FileResume, Mode: 0o644, Size: 10, Name: "r"})
			p.expect(rdcp.MsgResumeOffset)
			p.send(&rdcp.ResumeOffset{ID: 1, Offset: 2})
		}}, transfer.CodeProtocol, "does not confirm the offered 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := ln.Dial(ctx, &transfertest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			p := &rawPeer{t: t, tr: tr, ctx: ctx}
			for _, s := range tc.steps {
				s(p)
			}
			e := p.errorMsg()
			if transfer.Code(e.Code) != tc.code || !strings.Contains(e.Text, tc.text) {
				t.Errorf("ERROR %v %q, want %v containing %q", e.Code, e.Text, tc.code, tc.text)
			}
			if _, err := p.recv(); !errors.Is(err, transfer.ErrPeerGone) {
				t.Errorf("connection not ended after ERROR: %v", err)
			}
		})
	}

	// Nothing arrived anywhere, and the receiver still serves.
	entries, _ := os.ReadDir(dst)
	for _, e := range entries {
		if e.Name() != rdcp.PartialName("f") && e.Name() != rdcp.PartialName("r") && e.Name() != "d" {
			t.Errorf("unexpected %s in the destination", e.Name())
		}
	}
	src := tree(t, t.TempDir(), map[string][]byte{"good": randBytes(20, 3*tSlotSize)})
	tr, err := ln.Dial(ctx, &transfertest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&transfer.Sender{}).Send(ctx, tr, plan(t, filepath.Join(src, "good")))
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
