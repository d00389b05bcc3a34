package transfer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"hash/crc32"
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checkCombine(t *testing.T, a, b []byte) {
	t.Helper()
	want := crc32.Checksum(append(append([]byte{}, a...), b...), castagnoli)
	got := transfer.CRC32CCombine(crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), int64(len(b)))
	if got != want {
		t.Fatalf("combine(%d bytes, %d bytes) = %08x, CRC32C of the concatenation is %08x", len(a), len(b), got, want)
	}
}

func TestCRC32CCombine(t *testing.T) {
	data := randBytes(40, 3<<20+5)
	for _, split := range []int{0, 1, 7, 4095, 4096, 1 << 20, 3<<20 + 4, 3<<20 + 5} {
		checkCombine(t, data[:split], data[split:])
	}
	// The file's CRC32C from its chunks', as both ends combine them.
	const chunk = 64 << 10
	var crc uint32
	for off := 0; off < len(data); off += chunk {
		c := data[off:min(off+chunk, len(data))]
		crc = transfer.CRC32CCombine(crc, rdcp.CRC32C(c), int64(len(c)))
	}
	if want := crc32.Checksum(data, castagnoli); crc != want || rdcp.CRC32C(data) != want {
		t.Fatalf("CRC32C combined from chunks %08x, of the whole %08x", crc, want)
	}
}

func FuzzCRC32CCombine(f *testing.F) {
	f.Add([]byte("hello, "), []byte("world"))
	f.Add([]byte{}, []byte{0})
	f.Add(bytes.Repeat([]byte{0xff}, 100), bytes.Repeat([]byte{0}, 5000))
	f.Fuzz(func(t *testing.T, a, b []byte) { checkCombine(t, a, b) })
}

// corruptChunk is a sender Faults hook that flips a bit in every write (the
// first one, with once) whose data starts with chunk: a chunk corrupted on
// the way, which the sender writes again when asked.
func corruptChunk(chunk []byte, once bool) (*transfertest.Options, func() int) {
	var mu sync.Mutex
	n := 0
	return &transfertest.Options{Faults: transfertest.Faults{Write: func(_ int, b []byte) transfertest.Fault {
			mu.Lock()
			defer mu.Unlock()
			if bytes.HasPrefix(b, chunk) && !(once && n > 0) {
				b[len(chunk)/2] ^= 0x10
				n++
			}
			return transfertest.Deliver
		}}}, func() int {
			mu.Lock()
			defer mu.Unlock()
			return n
		}
}

// A chunk corrupted on the way fails its CRC32C at the receiver, which asks
// for that chunk again (RESEND): the file arrives correct, only that chunk
// moved twice, and no retry of the file was needed. Also for the last chunk,
// whose RESEND crosses the sender's DONE.
func TestCorruptChunkResent(t *testing.T) {
	data := randBytes(41, 9*tSlotSize+1)
	for _, tc := range []struct {
		name  string
		chunk int
	}{{"middle", 3}, {"last", 9}, {"first", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			src := tree(t, t.TempDir(), map[string][]byte{"f": data})
			dst := t.TempDir()
			chunk := data[tc.chunk*tSlotSize : min((tc.chunk+1)*tSlotSize, len(data))]
			scfg, corrupted := corruptChunk(chunk, true)
			o := pair(t, smallReceiver(dst), &transfer.Sender{}, plan(t, filepath.Join(src, "f")), scfg, &transfertest.Options{})
			if o.serr != nil || o.rerr != nil {
				t.Fatalf("send %v; receive %v", o.serr, o.rerr)
			}
			if corrupted() != 1 {
				t.Fatalf("the fault corrupted %d writes, want 1", corrupted())
			}
			allVerified(t, o.srep, 1)
			sameTree(t, src, dst)
			noPartials(t, dst)
			f, r := o.srep.Files[0], o.rrep.Files[0]
			if o.srep.Retries != 0 || o.srep.Resent != 1 || r.Resent != 1 {
				t.Errorf("file retries %d, chunks resent %d (receiver asked %d), want 0, 1, 1", o.srep.Retries, o.srep.Resent, r.Resent)
			}
			if f.Bytes != int64(len(data)) || o.srep.Bytes != int64(len(data)) {
				t.Errorf("bytes %d/%d, want %d (a chunk written again is not counted)", f.Bytes, o.srep.Bytes, len(data))
			}
			want := rdcp.CRC32C(data)
			if f.Verify != transfer.VerifyCRC32C || f.CRC32C != want || r.CRC32C != want || !r.Verified {
				t.Errorf("sender %v %08x, receiver %08x (verified %v), want crc32c %08x", f.Verify, f.CRC32C, r.CRC32C, r.Verified, want)
			}
		})
	}
}

// A chunk corrupted every time it is written ends its file after
// MaxChunkResends RESENDs with ErrDigest naming the chunk; nothing is left,
// and the connection goes on to the next file.
func TestCorruptChunkGivesUp(t *testing.T) {
	bad := randBytes(42, 6*tSlotSize)
	src := tree(t, t.TempDir(), map[string][]byte{"bad": bad, "good": randBytes(43, 3*tSlotSize)})
	dst := t.TempDir()
	scfg, corrupted := corruptChunk(bad[2*tSlotSize:3*tSlotSize], false)
	o := pair(t, smallReceiver(dst), &transfer.Sender{}, plan(t, filepath.Join(src, "bad"), filepath.Join(src, "good")), scfg, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("the connection should survive: send %v; receive %v", o.serr, o.rerr)
	}
	if n := corrupted(); n != rdcp.MaxChunkResends+1 {
		t.Errorf("chunk 2 was written %d times, want %d", n, rdcp.MaxChunkResends+1)
	}
	f := o.srep.Files[0]
	if f.Verified || !errors.Is(f.Err, transfer.ErrDigest) || !strings.Contains(f.Err.Error(), "chunk 2 of bad failed its CRC32C") {
		t.Errorf("bad: verified=%v err=%v, want ErrDigest naming chunk 2", f.Verified, f.Err)
	}
	if o.srep.Resent != rdcp.MaxChunkResends {
		t.Errorf("sender wrote %d chunks again, want %d", o.srep.Resent, rdcp.MaxChunkResends)
	}
	if exists(filepath.Join(dst, "bad")) || exists(filepath.Join(dst, rdcp.PartialName("bad"))) {
		t.Error("the corrupted file, or its partial copy, was left")
	}
	if !o.srep.Files[1].Verified {
		t.Errorf("good after bad: %v", o.srep.Files[1].Err)
	}
	if now, _, _ := o.rT.Registered(); now != 0 {
		t.Errorf("window still registered: %d", now)
	}
}

// Each policy does what it says, at both ends; the receiver's decides.
func TestVerifyModes(t *testing.T) {
	data := randBytes(44, 5*tSlotSize+3)
	for _, v := range []transfer.Verify{0, transfer.VerifyCRC32C, transfer.VerifySHA256, transfer.VerifyNone} {
		t.Run(v.String(), func(t *testing.T) {
			src := tree(t, t.TempDir(), map[string][]byte{"f": data})
			dst := t.TempDir()
			r := smallReceiver(dst)
			r.Verify = v
			o := pair(t, r, &transfer.Sender{}, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, &transfertest.Options{})
			if o.serr != nil || o.rerr != nil {
				t.Fatalf("send %v; receive %v", o.serr, o.rerr)
			}
			allVerified(t, o.srep, 1)
			sameTree(t, src, dst)
			want := v
			if v == 0 {
				want = transfer.VerifyCRC32C
			}
			if o.srep.Verify != want {
				t.Errorf("the sender agreed to %v, want %v", o.srep.Verify, want)
			}
			for who, f := range map[string]transfer.FileResult{"sender": o.srep.Files[0], "receiver": o.rrep.Files[0]} {
				var wantSHA [transfer.DigestSize]byte
				var wantCRC uint32
				switch want {
				case transfer.VerifySHA256:
					wantSHA = sha256.Sum256(data)
				case transfer.VerifyCRC32C:
					wantCRC = rdcp.CRC32C(data)
				}
				if f.Verify != want || f.Digest != wantSHA || f.CRC32C != wantCRC || !f.Verified {
					t.Errorf("%s: %v sha256 %x crc32c %08x verified %v; want %v %x %08x", who, f.Verify, f.Digest, f.CRC32C, f.Verified, want, wantSHA, wantCRC)
				}
			}
		})
	}
}

// A sender that asks for more verification than the receiver's policy gives
// refuses it before any file, saying which --verify to change; as much or
// more is accepted.
func TestSenderVerifyPreference(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"f": []byte("content")})
	for _, tc := range []struct {
		recv, send transfer.Verify
		ok         bool
	}{
		{0, transfer.VerifySHA256, false},
		{transfer.VerifyNone, transfer.VerifyCRC32C, false},
		{transfer.VerifySHA256, transfer.VerifyCRC32C, true},
		{0, transfer.VerifyNone, true},
		{transfer.VerifySHA256, transfer.VerifySHA256, true},
	} {
		dst := t.TempDir()
		r := smallReceiver(dst)
		r.Verify = tc.recv
		o := pair(t, r, &transfer.Sender{Verify: tc.send}, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, &transfertest.Options{})
		if tc.ok {
			if o.serr != nil || o.rerr != nil || !o.srep.OK(1) {
				t.Errorf("receiver %v, sender asks %v: send %v; receive %v", tc.recv, tc.send, o.serr, o.rerr)
			}
			continue
		}
		if !errors.Is(o.serr, transfer.ErrVerify) || !strings.Contains(o.serr.Error(), "(Receiver.Verify) must be "+tc.send.String()) {
			t.Errorf("receiver %v, sender asks %v: send %v, want ErrVerify saying Receiver.Verify must be %v", tc.recv, tc.send, o.serr, tc.send)
		}
		if !errors.Is(o.rerr, transfer.ErrVerify) {
			t.Errorf("receiver %v, sender asks %v: receive %v, want the sender's ErrVerify", tc.recv, tc.send, o.rerr)
		}
		if exists(filepath.Join(dst, "f")) || len(o.srep.Files) != 0 {
			t.Errorf("receiver %v, sender asks %v: a file moved", tc.recv, tc.send)
		}
	}
}

// A sender of protocol version 2 (before per-chunk CRC32C) is told both
// versions and to upgrade the sender.
func TestOldSender(t *testing.T) {
	st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := smallReceiver(t.TempDir()).ServeConn(ctx, rt)
		rt.Close()
		errc <- err
	}()
	p := &rawPeer{t: t, tr: st, ctx: ctx}
	p.send(&rdcp.Hello{Role: rdcp.RoleSender, MinVersion: 2, MaxVersion: 2})
	e := p.errorMsg()
	for _, want := range []string{"protocol version 2", "this receiver 3", "upgrade rdmacp on the sender"} {
		if e.Code != rdcp.CodeVersion || !strings.Contains(e.Text, want) {
			t.Errorf("ERROR %v %q, want a version mismatch saying %q", e.Code, e.Text, want)
		}
	}
	if err := <-errc; !errors.Is(err, transfer.ErrVersion) {
		t.Errorf("receiver: %v", err)
	}
}

// A receiver of protocol version 2 can still read this sender's HELLO (its
// verify byte is the old reserved field, zero) and refuses it as version 2
// did; the sender says which end to upgrade.
func TestOldReceiver(t *testing.T) {
	st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		a, err := rt.Receive(ctx)
		if err != nil {
			return
		}
		h := a.Msg[rdcp.HeaderSize:]
		if len(h) < 8 || h[6] != 0 || h[7] != 0 {
			t.Errorf("the sender's HELLO has %x where version 2 has a reserved zero field", h[6:8])
		}
		b, _ := rdcp.Encode(&rdcp.ErrorMsg{Code: rdcp.CodeVersion, Text: "the sender speaks protocol versions 3..3, this receiver 2: use matching rdmacp versions"})
		rt.Send(ctx, b)
		rt.Close()
	}()
	src := tree(t, t.TempDir(), map[string][]byte{"f": []byte("x")})
	_, err := (&transfer.Sender{}).Send(ctx, st, plan(t, filepath.Join(src, "f")))
	st.Close()
	if !errors.Is(err, transfer.ErrVersion) {
		t.Fatalf("send: %v, want ErrVersion", err)
	}
	for _, want := range []string{"protocol version 2", "this sender 3", "upgrade rdmacp on the receiver"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("send: %v, want it to say %q", err, want)
		}
	}
}

// A transfer cut short keeps, with the chunks checked and written out of
// order on the pool, only the contiguous prefix; resuming under
// --verify sha256 compares the prefixes by SHA-256.
func TestResumeSHA256(t *testing.T) {
	data := randBytes(45, 20*tSlotSize+5)
	src := tree(t, t.TempDir(), map[string][]byte{"f": data})
	dst := t.TempDir()
	items := plan(t, filepath.Join(src, "f"))
	r := smallReceiver(dst)
	r.Verify = transfer.VerifySHA256
	o := pair(t, r, &transfer.Sender{}, items, breakAt(9), &transfertest.Options{})
	if !errors.Is(o.serr, transfer.ErrPeerGone) {
		t.Fatalf("send: %v", o.serr)
	}
	fi, err := os.Stat(filepath.Join(dst, rdcp.PartialName("f")))
	if err != nil || fi.Size() == 0 || fi.Size()%tSlotSize != 0 {
		t.Fatalf("partial copy: %v, want whole chunks", err)
	}
	o = pair(t, r, &transfer.Sender{Resume: true}, items, &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("resume: send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	if f := o.srep.Files[0]; f.Offset != fi.Size() || f.Digest != sha256.Sum256(data) {
		t.Errorf("resumed at %d with %x, want %d and the SHA-256 of the whole", f.Offset, f.Digest, fi.Size())
	}
	sameTree(t, src, dst)
}

// Two chunks asked for again at once, after DONE: one stays corrupted and
// fails the file, the other's RESEND is still answered (the sender takes
// RESENDs before the RESULT), and the receiver takes that write in before
// it goes on: the connection carries the next file.
func TestCorruptChunksAfterDone(t *testing.T) {
	bad := randBytes(46, 3*tSlotSize) // fits the window: DONE follows at once
	src := tree(t, t.TempDir(), map[string][]byte{"bad": bad, "good": randBytes(47, 2*tSlotSize)})
	dst := t.TempDir()
	var mu sync.Mutex
	n2 := 0
	scfg := &transfertest.Options{Faults: transfertest.Faults{Write: func(_ int, b []byte) transfertest.Fault {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case bytes.HasPrefix(b, bad[:tSlotSize]):
			b[1] ^= 1 // always
		case bytes.HasPrefix(b, bad[2*tSlotSize:]) && n2 < rdcp.MaxChunkResends:
			b[1] ^= 1 // until its last try
			n2++
		}
		return transfertest.Deliver
	}}}
	o := pair(t, smallReceiver(dst), &transfer.Sender{}, plan(t, filepath.Join(src, "bad"), filepath.Join(src, "good")), scfg, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("the connection should survive: send %v; receive %v", o.serr, o.rerr)
	}
	if f := o.srep.Files[0]; f.Verified || !errors.Is(f.Err, transfer.ErrDigest) || !strings.Contains(f.Err.Error(), "chunk 0 of bad") {
		t.Errorf("bad: verified=%v err=%v, want ErrDigest naming chunk 0", f.Verified, f.Err)
	}
	if !o.srep.Files[1].Verified {
		t.Errorf("good after bad: %v", o.srep.Files[1].Err)
	}
	if exists(filepath.Join(dst, "bad")) || exists(filepath.Join(dst, rdcp.PartialName("bad"))) {
		t.Error("the corrupted file, or its partial copy, was left")
	}
}

// A receiver that asks for a chunk it has not been sent, for one chunk more
// than MaxChunkResends times, or for any chunk when it verifies without
// per-chunk CRC32C, is a protocol violation: the sender ends the connection
// rather than write on.
func TestSenderBoundsResend(t *testing.T) {
	for _, tc := range []struct {
		name    string
		verify  transfer.Verify
		resends []uint64
		want    string
	}{
		{"chunk not sent", 0, []uint64{5}, "RESEND of chunk 5 of transfer 1, which has 0 credited of 2 sent"},
		{"too often", 0, []uint64{1, 1, 1, 1, 1}, "asked for again 4 times already: at most 4"},
		{"no CRC32C", transfer.VerifySHA256, []uint64{0}, "which has no CRC32C chunks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(48, 10*tSlotSize)})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
			defer rt.Close()
			p := &rawPeer{t: t, tr: rt, ctx: ctx}
			rewrites := make(chan int, 1)
			go func() {
				// Every way out reports (the test waits for it): short of
				// the two first writes, a negative count.
				writes := 0
				defer func() { rewrites <- writes - 2 }()
				if _, err := p.recv(); err != nil { // HELLO
					return
				}
				p.send(&rdcp.Hello{Role: rdcp.RoleReceiver, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion, Verify: rdcp.Verify(tc.verify), Slots: 2, SlotSize: tSlotSize})
				if _, err := p.recv(); err != nil { // FILE
					return
				}
				p.send(&rdcp.ResumeOffset{ID: 1})
				w, err := rt.Register(2*rdcp.Stride(rdcp.Verify(tc.verify), tSlotSize), true)
				if err != nil {
					return
				}
				p.send(&rdcp.Window{ID: 1, Slots: 2, SlotSize: tSlotSize, Addr: w.Remote().Addr, RKey: w.Remote().RKey})
				for writes < 2 { // the window is full: the sender waits for a credit
					if a, err := rt.Receive(ctx); err != nil {
						return
					} else if a.Write {
						writes++
					}
				}
				for _, k := range tc.resends {
					p.send(&rdcp.Resend{ID: 1, Chunk: k})
				}
				for { // count what the sender writes again
					a, err := rt.Receive(ctx)
					if err != nil {
						return
					}
					if a.Write {
						writes++
					}
				}
			}()
			_, err := (&transfer.Sender{IdleTimeout: 5 * time.Second}).Send(ctx, st, plan(t, filepath.Join(src, "f")))
			st.Close()
			if !errors.Is(err, transfer.ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("send: %v, want a protocol error saying %q", err, tc.want)
			}
			if n, want := <-rewrites, max(0, len(tc.resends)-1); tc.name == "too often" && n != want {
				t.Errorf("the sender wrote chunk 1 again %d times, want %d", n, want)
			}
		})
	}
}

// --resume under CRC32C sums a prefix of several pieces (on the pool, at
// both ends) and combines them: a matching prefix of 2.5 MiB is kept, one
// that differs in its second MiB is not.
func TestResumeCRC32CLongPrefix(t *testing.T) {
	data := randBytes(49, 3<<20+77)
	const kept = 5 << 19
	for _, tc := range []struct {
		name    string
		flip    int // a byte of the partial copy to change, -1 none
		wantOff int64
	}{{"same", -1, kept}, {"differs", 1<<20 + 3, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			partial := append([]byte{}, data[:kept]...)
			if tc.flip >= 0 {
				partial[tc.flip] ^= 1
			}
			src := tree(t, t.TempDir(), map[string][]byte{"f": data})
			dst := tree(t, t.TempDir(), map[string][]byte{rdcp.PartialName("f"): partial})
			r := &transfer.Receiver{Dir: dst, Slots: 4, SlotSize: 64 << 10, IdleTimeout: 5 * time.Second}
			o := pair(t, r, &transfer.Sender{Resume: true}, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, &transfertest.Options{})
			if o.serr != nil || o.rerr != nil {
				t.Fatalf("send %v; receive %v", o.serr, o.rerr)
			}
			allVerified(t, o.srep, 1)
			if f := o.srep.Files[0]; f.Offset != tc.wantOff || f.CRC32C != rdcp.CRC32C(data) {
				t.Errorf("resumed at %d with CRC32C %08x, want %d and %08x", f.Offset, f.CRC32C, tc.wantOff, rdcp.CRC32C(data))
			}
			sameTree(t, src, dst)
		})
	}
}

// Under CRC32C both ends sum their prefixes at the same time: the sender
// sums its file from the start while the receiver sums its partial copy,
// before the RESUME-OFFSET that says how much to compare (before, the
// sender began only then). The receiver's offer is held until the sender
// has summed a piece (at most 2 s, within the idle timeouts).
func TestResumeSumsAtBothEndsAtOnce(t *testing.T) {
	const prefix = 4 << 20
	data := randBytes(50, prefix+5000)
	src := tree(t, t.TempDir(), map[string][]byte{"f": data})
	dst := tree(t, t.TempDir(), map[string][]byte{rdcp.PartialName("f"): data[:prefix]})
	var mu sync.Mutex
	pieces := 0 // summed at either end
	r, s := smallReceiver(dst), &transfer.Sender{Resume: true}
	transfer.SetHashChunkHook(r, s, func() { mu.Lock(); pieces++; mu.Unlock() })
	atOffer := -1
	rcfg := &transfertest.Options{Faults: transfertest.Faults{Message: func(i int, _ []byte) transfertest.Fault {
		if i != 1 { // 0 HELLO, 1 RESUME-OFFSET
			return transfertest.Deliver
		}
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			mu.Lock()
			n := pieces
			mu.Unlock()
			if n > prefix>>20 {
				break
			}
		}
		mu.Lock()
		atOffer = pieces
		mu.Unlock()
		return transfertest.Deliver
	}}}
	o := pair(t, r, s, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, rcfg)
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	if f := o.srep.Files[0]; f.Offset != prefix {
		t.Errorf("resumed at %d, want %d", f.Offset, prefix)
	}
	if atOffer <= prefix>>20 {
		t.Errorf("%d pieces summed when the receiver offered its prefix: the receiver's %d, none of the sender's", atOffer, prefix>>20)
	}
	sameTree(t, src, dst)
}
