package transfer_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// seeds are valid messages of every type.
func seeds() []rdcp.Message {
	var d [transfer.DigestSize]byte
	d[3] = 9
	return []rdcp.Message{
		&rdcp.Hello{Role: rdcp.RoleSender, Flags: rdcp.HelloPSK, MinVersion: 1, MaxVersion: 3, Slots: 16, SlotSize: 1 << 20},
		&rdcp.Hello{Role: rdcp.RoleReceiver, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion, Slots: 1, SlotSize: 4096},
		&rdcp.Hello{Role: rdcp.RoleReceiver, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion, Verify: rdcp.VerifyNone, Slots: 2, SlotSize: 8192},
		&rdcp.Auth{MAC: d},
		&rdcp.File{ID: 1, Kind: rdcp.KindFile, Flags: rdcp.FileResume, Mode: 0o755, Size: 12345, MTime: -5, Name: "a/b/c"},
		&rdcp.File{ID: 2, Kind: rdcp.KindDir, Mode: 0o700, Name: "dir"},
		&rdcp.Window{ID: 3, Slots: 4, SlotSize: 4096, RKey: 7, Addr: 1 << 40},
		&rdcp.ResumeOffset{ID: 4, Offset: 99, Digest: d},
		&rdcp.Credit{ID: 5, Consumed: 3},
		&rdcp.Done{ID: 6, Chunks: 2, Digest: d},
		&rdcp.Result{ID: 7, Code: rdcp.CodeDigest, Digest: d, Text: "mismatch ü"},
		&rdcp.ErrorMsg{Code: rdcp.CodeProtocol, Text: "bad"},
		&rdcp.Bye{},
		&rdcp.KeepAlive{},
		&rdcp.Resend{ID: 8, Chunk: 12345},
	}
}

// checkCanonical: whatever a decoder accepts re-encodes to the same bytes
// (so there is one encoding per message, and the encoder never produces
// what the decoder rejects).
func checkCanonical(t *testing.T, b []byte, m rdcp.Message) {
	t.Helper()
	again, err := rdcp.Encode(m)
	if err != nil {
		t.Fatalf("decoded %+v does not encode: %v", m, err)
	}
	if !bytes.Equal(again, b) {
		t.Fatalf("not canonical:\n in  %x\n out %x", b, again)
	}
	if len(b) > transfer.MaxMessageSize {
		t.Fatalf("accepted %d bytes > MaxMessageSize", len(b))
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range seeds() {
		b, _ := rdcp.Encode(m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := rdcp.Decode(b)
		if err != nil {
			var e *rdcp.Error
			if !errors.As(err, &e) || (e.Code != rdcp.CodeProtocol && e.Code != rdcp.CodeVersion) {
				t.Fatalf("error %v is not a protocol/version *Error", err)
			}
			return
		}
		checkCanonical(t, b, m)
		if f, ok := m.(*rdcp.File); ok {
			checkSafeName(t, f.Name)
		}
	})
}

func FuzzDecodeHeader(f *testing.F) {
	b, _ := rdcp.Encode(&rdcp.Bye{})
	f.Add(b)
	f.Add(header(rdcp.MsgFile, rdcp.MaxPayload+1))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := rdcp.DecodeHeader(b)
		if err != nil {
			return
		}
		if h.Magic != rdcp.Magic || h.Version != rdcp.WireVersion || h.Length > rdcp.MaxPayload || len(b) < rdcp.HeaderSize {
			t.Fatalf("accepted header %+v", h)
		}
	})
}

// fuzzPayload fuzzes one payload decoder.
func fuzzPayload[M rdcp.Message](f *testing.F, typ rdcp.MsgType, decode func([]byte) (M, error)) {
	for _, m := range seeds() {
		if m.Type() == typ {
			b, _ := rdcp.Encode(m)
			f.Add(b[rdcp.HeaderSize:])
		}
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := decode(p)
		if err != nil {
			if !errors.Is(err, rdcp.ErrProtocol) {
				t.Fatalf("error %v is not a protocol error", err)
			}
			return
		}
		b := header(typ, uint32(len(p)))
		checkCanonical(t, append(b, p...), m)
	})
}

func FuzzDecodeHello(f *testing.F)  { fuzzPayload(f, rdcp.MsgHello, rdcp.DecodeHello) }
func FuzzDecodeAuth(f *testing.F)   { fuzzPayload(f, rdcp.MsgAuth, rdcp.DecodeAuth) }
func FuzzDecodeFile(f *testing.F)   { fuzzPayload(f, rdcp.MsgFile, rdcp.DecodeFile) }
func FuzzDecodeWindow(f *testing.F) { fuzzPayload(f, rdcp.MsgWindow, rdcp.DecodeWindow) }
func FuzzDecodeResumeOffset(f *testing.F) {
	fuzzPayload(f, rdcp.MsgResumeOffset, rdcp.DecodeResumeOffset)
}
func FuzzDecodeCredit(f *testing.F) { fuzzPayload(f, rdcp.MsgCredit, rdcp.DecodeCredit) }
func FuzzDecodeDone(f *testing.F)   { fuzzPayload(f, rdcp.MsgDone, rdcp.DecodeDone) }
func FuzzDecodeResult(f *testing.F) { fuzzPayload(f, rdcp.MsgResult, rdcp.DecodeResult) }
func FuzzDecodeError(f *testing.F)  { fuzzPayload(f, rdcp.MsgError, rdcp.DecodeError) }
func FuzzDecodeBye(f *testing.F)    { fuzzPayload(f, rdcp.MsgBye, rdcp.DecodeBye) }
func FuzzDecodeResend(f *testing.F) { fuzzPayload(f, rdcp.MsgResend, rdcp.DecodeResend) }
func FuzzDecodeKeepAlive(f *testing.F) {
	fuzzPayload(f, rdcp.MsgKeepAlive, rdcp.DecodeKeepAlive)
}

// checkSafeName: an accepted name stays inside any directory it is joined to.
func checkSafeName(t *testing.T, name string) {
	t.Helper()
	if !filepath.IsLocal(name) || path.Clean(name) != name || strings.Contains(name, "\x00") {
		t.Fatalf("CheckName accepted %q", name)
	}
	for c := range strings.SplitSeq(name, "/") {
		if c == ".." || c == "." || c == "" || len(c) > rdcp.MaxComponentLen {
			t.Fatalf("CheckName accepted %q (component %q)", name, c)
		}
	}
	if len(path.Base(rdcp.PartialName(name))) > 255 {
		t.Fatalf("partial name of %q exceeds NAME_MAX", name)
	}
}

func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "/abs", "a//b", ".", "x" + rdcp.PartialSuffix, strings.Repeat("y", 240)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if rdcp.CheckName(name) == nil {
			checkSafeName(t, name)
		}
	})
}

// FuzzReceiver drives a Receiver with an arbitrary sequence of messages and
// write notices after a valid HELLO. Whatever comes, it must end the
// connection (no hang, no panic), create nothing outside its directory, and
// put nothing under a final name unverified.
//
// Input: a sequence of records, each a 2-byte big-endian length and that
// many bytes; a record starting with 0xff is a write notice (4-byte imm,
// 4-byte length), any other a control message sent as is.
func FuzzReceiver(f *testing.F) {
	rec := func(b []byte) []byte { return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...) }
	msg := func(m rdcp.Message) []byte { b, _ := rdcp.Encode(m); return rec(b) }
	write := func(imm uint32, n uint32) []byte {
		b := []byte{0xff}
		b = binary.BigEndian.AppendUint32(b, imm)
		return rec(binary.BigEndian.AppendUint32(b, n))
	}
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	f.Add(join(msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Size: 5, Name: "f"}), write(0, 5), msg(&rdcp.Done{ID: 1, Chunks: 1}), msg(&rdcp.Bye{})))
	f.Add(join(msg(&rdcp.File{ID: 1, Kind: rdcp.KindDir, Mode: 0o755, Name: "d"}), msg(&rdcp.File{ID: 2, Kind: rdcp.KindFile, Name: "d/e"}), msg(&rdcp.Done{ID: 2}), msg(&rdcp.Bye{})))
	f.Add(join(msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Flags: rdcp.FileResume, Size: 9000, Name: "p"}), msg(&rdcp.ResumeOffset{ID: 1}), write(0, 4096), write(rdcp.EncodeImm(1, 1), 4096)))
	f.Add(join(msg(&rdcp.Credit{ID: 1, Consumed: 1})))
	// The default verification: each chunk's write carries its CRC32C
	// (ChunkCRCSize more bytes); the receiver asks for bad ones again.
	f.Add(join(msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Size: 5, Name: "f"}), write(0, 5+rdcp.ChunkCRCSize), write(0, 5+rdcp.ChunkCRCSize), msg(&rdcp.Done{ID: 1, Chunks: 1}), msg(&rdcp.Bye{})))
	f.Add(join(msg(&rdcp.File{ID: 1, Kind: rdcp.KindFile, Size: 9000, Name: "g"}), write(0, 4096+rdcp.ChunkCRCSize), msg(&rdcp.Done{ID: 1, Chunks: 3}), write(rdcp.EncodeImm(1, 1), 4096+rdcp.ChunkCRCSize), write(0, 4096+rdcp.ChunkCRCSize)))
	f.Fuzz(func(t *testing.T, in []byte) {
		outer := t.TempDir()
		dst := filepath.Join(outer, "dst")
		os.Mkdir(dst, 0o755)
		os.WriteFile(filepath.Join(dst, rdcp.PartialName("p")), []byte("partial"), 0o600)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, rt := transfertest.Pipe(&transfertest.Options{MaxSlots: 4}, &transfertest.Options{MaxSlots: 4})
		r := &transfer.Receiver{Dir: dst, Slots: 2, SlotSize: 4096, IdleTimeout: 50 * time.Millisecond}
		done := make(chan error, 1)
		go func() {
			_, err := r.ServeConn(ctx, rt)
			rt.Close()
			done <- err
		}()
		go func() { // drain what the receiver says
			for {
				if _, err := st.Receive(ctx); err != nil {
					return
				}
			}
		}()
		p := &rawPeer{t: t, tr: st, ctx: ctx}
		p.send(&rdcp.Hello{Role: rdcp.RoleSender, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion})
		for len(in) >= 2 {
			n := int(binary.BigEndian.Uint16(in))
			in = in[2:]
			if n > len(in) {
				n = len(in)
			}
			b := in[:n]
			in = in[n:]
			var err error
			if len(b) == 9 && b[0] == 0xff {
				err = p.imm(binary.BigEndian.Uint32(b[1:]), int(binary.BigEndian.Uint32(b[5:])))
			} else if len(b) <= transfer.MaxMessageSize {
				err = st.Send(ctx, b)
			}
			if err != nil {
				break
			}
		}
		select {
		case <-done:
		case <-time.After(4 * time.Second):
			t.Fatal("receiver did not end the connection")
		}
		st.Close()
		// Nothing outside dst; every regular file in dst is either the seed
		// partial, a partial copy, or a file whose DONE digest matched: a
		// file of the fuzzer's zero-filled writes can only verify if the
		// fuzzer supplied the matching SHA-256, which it cannot (it would
		// need a preimage), except for empty files.
		filepath.WalkDir(outer, func(q string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(dst, q)
			if strings.HasPrefix(rel, "..") {
				t.Fatalf("file outside the destination: %s", q)
			}
			if strings.HasSuffix(q, rdcp.PartialSuffix) {
				return nil
			}
			if fi, _ := d.Info(); fi != nil && fi.Size() != 0 {
				t.Fatalf("unverified data under a final name: %s (%d bytes)", rel, fi.Size())
			}
			return nil
		})
	})
}
