package transfer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

const (
	tSlots    = 4
	tSlotSize = 4096
)

func smallReceiver(dst string) *transfer.Receiver {
	return &transfer.Receiver{Dir: dst, Slots: tSlots, SlotSize: tSlotSize, IdleTimeout: 5 * time.Second}
}

// breakAt breaks the connection at the sender's i-th write.
func breakAt(i int) *transfertest.Options {
	return &transfertest.Options{Faults: transfertest.Faults{Write: func(n int, _ []byte) transfertest.Fault {
		if n == i {
			return transfertest.Break
		}
		return transfertest.Deliver
	}}}
}

func TestSenderKilledLeavesNoFinalFileThenResume(t *testing.T) {
	data := randBytes(7, 25*tSlotSize+99)
	src := tree(t, t.TempDir(), map[string][]byte{"f": data})
	dst := t.TempDir()
	items := plan(t, filepath.Join(src, "f"))

	o := pair(t, smallReceiver(dst), &transfer.Sender{}, items, breakAt(10), &transfertest.Options{})
	if !errors.Is(o.serr, transfer.ErrPeerGone) || !errors.Is(o.rerr, transfer.ErrPeerGone) {
		t.Fatalf("send: %v; receive: %v; want ErrPeerGone on both", o.serr, o.rerr)
	}
	if exists(filepath.Join(dst, "f")) {
		t.Fatal("final file exists after the sender was killed")
	}
	partial := filepath.Join(dst, rdcp.PartialName("f"))
	fi, err := os.Stat(partial)
	if err != nil {
		t.Fatalf("no partial copy kept: %v", err)
	}
	// At most the 10 chunks that arrived (the receiver may have failed
	// sending a credit before consuming the last), whole chunks only.
	kept := fi.Size()
	if kept == 0 || kept > 10*tSlotSize || kept%tSlotSize != 0 {
		t.Errorf("partial has %d bytes, want whole chunks, at most the %d that arrived", kept, 10*tSlotSize)
	}
	if now, _, _ := o.rT.Registered(); now != 0 {
		t.Errorf("receiver window still registered (%d bytes)", now)
	}
	if len(o.rrep.Files) != 1 || o.rrep.Files[0].Verified || !errors.Is(o.rrep.Files[0].Err, transfer.ErrPeerGone) {
		t.Errorf("receiver report %+v", o.rrep.Files)
	}

	// Resume: only the rest moves.
	o = pair(t, smallReceiver(dst), &transfer.Sender{Resume: true}, items, &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("resume: send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	f := o.srep.Files[0]
	if f.Offset != kept || f.Bytes != int64(len(data))-kept {
		t.Errorf("resumed at %d moving %d bytes, want %d and %d", f.Offset, f.Bytes, kept, int64(len(data))-kept)
	}
	sameTree(t, src, dst)
	noPartials(t, dst)
}

func TestResumeWithChangedSourceStartsOver(t *testing.T) {
	data := randBytes(8, 12*tSlotSize)
	src := tree(t, t.TempDir(), map[string][]byte{"f": data})
	dst := t.TempDir()
	items := plan(t, filepath.Join(src, "f"))
	o := pair(t, smallReceiver(dst), &transfer.Sender{}, items, breakAt(5), &transfertest.Options{})
	if !errors.Is(o.serr, transfer.ErrPeerGone) {
		t.Fatalf("send: %v", o.serr)
	}
	data[100] ^= 0xff // the prefix the receiver holds no longer matches
	os.WriteFile(filepath.Join(src, "f"), data, 0o640)
	items = plan(t, filepath.Join(src, "f"))
	o = pair(t, smallReceiver(dst), &transfer.Sender{Resume: true}, items, &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	if f := o.srep.Files[0]; f.Offset != 0 || f.Bytes != int64(len(data)) {
		t.Errorf("offset %d bytes %d, want a full resend", f.Offset, f.Bytes)
	}
	sameTree(t, src, dst)
}

func TestResumeEdgeCases(t *testing.T) {
	data := randBytes(9, 3*tSlotSize)
	for _, tc := range []struct {
		name       string
		partial    []byte
		resume     bool
		wantOffset int64
	}{
		{"not asked", data[:tSlotSize], false, 0},
		{"prefix", data[:tSlotSize+5], true, tSlotSize + 5},
		{"complete", data, true, int64(len(data))},
		{"longer than the file", append(append([]byte{}, data...), 1, 2, 3), true, 0},
		{"empty", nil, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tree(t, t.TempDir(), map[string][]byte{"f": data})
			dst := tree(t, t.TempDir(), map[string][]byte{rdcp.PartialName("f"): tc.partial})
			o := pair(t, smallReceiver(dst), &transfer.Sender{Resume: tc.resume}, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, &transfertest.Options{})
			if o.serr != nil || o.rerr != nil {
				t.Fatalf("send %v; receive %v", o.serr, o.rerr)
			}
			allVerified(t, o.srep, 1)
			if f := o.srep.Files[0]; f.Offset != tc.wantOffset || f.Bytes != int64(len(data))-tc.wantOffset {
				t.Errorf("offset %d, bytes %d; want offset %d", f.Offset, f.Bytes, tc.wantOffset)
			}
			sameTree(t, src, dst)
			noPartials(t, dst)
		})
	}
}

func TestDiskFullLeavesNothing(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"big": randBytes(10, 20*tSlotSize), "small": []byte("fits")})
	dst := t.TempDir()
	r := smallReceiver(dst)
	transfer.SetWriteFault(r, func(name string, off int64, n int) error {
		if name == "big" && off >= 6*tSlotSize {
			return syscall.ENOSPC
		}
		return nil
	})
	o := pair(t, r, &transfer.Sender{}, plan(t, filepath.Join(src, "big"), filepath.Join(src, "small")), &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("the connection should survive a full disk: send %v; receive %v", o.serr, o.rerr)
	}
	big := o.srep.Files[0]
	if big.Verified || !errors.Is(big.Err, transfer.ErrNoSpace) {
		t.Errorf("big: verified=%v err=%v, want ErrNoSpace", big.Verified, big.Err)
	}
	if !strings.Contains(big.Err.Error(), "no space") {
		t.Errorf("error does not say what happened: %v", big.Err)
	}
	if exists(filepath.Join(dst, "big")) || exists(filepath.Join(dst, rdcp.PartialName("big"))) {
		t.Error("something left under the final or partial name after ENOSPC")
	}
	if !o.srep.Files[1].Verified {
		t.Errorf("small after big failed: %v", o.srep.Files[1].Err)
	}
	if now, _, _ := o.rT.Registered(); now != 0 {
		t.Errorf("window still registered: %d", now)
	}
}

// With --verify sha256 a corrupted chunk is found by the file's digest:
// the file fails and is sent again whole (Sender.Retries). The default,
// CRC32C per chunk, asks for the chunk again instead:
// TestCorruptChunkResent.
func TestCorruptDataDetectedAndRetried(t *testing.T) {
	data := randBytes(11, 9*tSlotSize+1)
	src := tree(t, t.TempDir(), map[string][]byte{"f": data})
	corrupt := func(once bool) *transfertest.Options {
		done := false
		return &transfertest.Options{Faults: transfertest.Faults{Write: func(i int, b []byte) transfertest.Fault {
			if i == 3 && !(once && done) {
				b[7] ^= 1
				done = true
			}
			return transfertest.Deliver
		}}}
	}
	dst := t.TempDir()
	sha := func() *transfer.Receiver { r := smallReceiver(dst); r.Verify = transfer.VerifySHA256; return r }
	o := pair(t, sha(), &transfer.Sender{}, plan(t, filepath.Join(src, "f")), corrupt(false), &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	if f := o.srep.Files[0]; f.Verified || !errors.Is(f.Err, transfer.ErrDigest) {
		t.Errorf("corrupt data: verified=%v err=%v, want ErrDigest", f.Verified, f.Err)
	}
	if exists(filepath.Join(dst, "f")) || exists(filepath.Join(dst, rdcp.PartialName("f"))) {
		t.Error("corrupt copy left behind")
	}

	o = pair(t, sha(), &transfer.Sender{Retries: 1}, plan(t, filepath.Join(src, "f")), corrupt(true), &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	if o.srep.Retries != 1 || o.srep.Files[0].Retries != 1 {
		t.Errorf("retries %d/%d, want 1", o.srep.Retries, o.srep.Files[0].Retries)
	}
	sameTree(t, src, dst)
}

// faultCase runs one transfer with a fault and expects both ends to fail
// with the given errors and no final file.
func TestInjectedFaults(t *testing.T) {
	data := randBytes(12, 16*tSlotSize)
	// Receiver messages: 0 HELLO, 1 RESUME-OFFSET, 2 WINDOW, 3.. CREDIT.
	for _, tc := range []struct {
		name       string
		s, r       *transfertest.Options
		sendErr    error
		recvErr    error
		recvSubstr string
	}{
		{
			name:    "dropped write",
			s:       &transfertest.Options{Faults: transfertest.Faults{Write: faultAt(2, transfertest.Drop)}},
			sendErr: transfer.ErrProtocol, recvErr: transfer.ErrProtocol, recvSubstr: "expected slot 2 sequence 2",
		},
		{
			name:    "reordered writes",
			s:       &transfertest.Options{Faults: transfertest.Faults{Write: faultAt(1, transfertest.Hold)}},
			sendErr: transfer.ErrProtocol, recvErr: transfer.ErrProtocol, recvSubstr: "sequence 2, expected slot 1 sequence 1",
		},
		{
			name:    "reordered credits",
			r:       &transfertest.Options{Faults: transfertest.Faults{Message: faultAt(3, transfertest.Hold)}},
			sendErr: transfer.ErrProtocol, recvErr: transfer.ErrProtocol, recvSubstr: "CREDIT",
		},
		{
			name: "corrupted window key",
			r: &transfertest.Options{Faults: transfertest.Faults{Message: func(i int, b []byte) transfertest.Fault {
				if i == 2 {
					b[rdcp.HeaderSize+12] ^= 0xff // rkey
				}
				return transfertest.Deliver
			}}},
			sendErr: transfer.ErrRemoteAccess, recvErr: transfer.ErrPeerGone,
		},
		{
			name: "corrupted magic",
			s: &transfertest.Options{Faults: transfertest.Faults{Message: func(i int, b []byte) transfertest.Fault {
				if i == 1 { // FILE
					b[0] ^= 0xff
				}
				return transfertest.Deliver
			}}},
			sendErr: transfer.ErrProtocol, recvErr: transfer.ErrProtocol, recvSubstr: "bad magic",
		},
		{
			name: "corrupted message length",
			s: &transfertest.Options{Faults: transfertest.Faults{Message: func(i int, b []byte) transfertest.Fault {
				if i == 1 {
					b[11]++
				}
				return transfertest.Deliver
			}}},
			sendErr: transfer.ErrProtocol, recvErr: transfer.ErrProtocol, recvSubstr: "announces",
		},
		{
			name:    "connection closed by receiver mid-data",
			r:       &transfertest.Options{Faults: transfertest.Faults{Message: faultAt(4, transfertest.Break)}},
			sendErr: transfer.ErrPeerGone, recvErr: transfer.ErrPeerGone,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tree(t, t.TempDir(), map[string][]byte{"f": data})
			dst := t.TempDir()
			r := smallReceiver(dst)
			r.Slots = 4
			o := pair(t, r, &transfer.Sender{}, plan(t, filepath.Join(src, "f")), tc.s, tc.r)
			if !errors.Is(o.serr, tc.sendErr) {
				t.Errorf("sender: %v, want %v", o.serr, tc.sendErr)
			}
			if !errors.Is(o.rerr, tc.recvErr) {
				t.Errorf("receiver: %v, want %v", o.rerr, tc.recvErr)
			}
			if tc.recvSubstr != "" && (o.rerr == nil || !strings.Contains(o.rerr.Error(), tc.recvSubstr)) {
				t.Errorf("receiver error %v does not mention %q", o.rerr, tc.recvSubstr)
			}
			if exists(filepath.Join(dst, "f")) {
				t.Error("final file exists")
			}
			if now, _, _ := o.rT.Registered(); now != 0 {
				t.Errorf("receiver window still registered: %d bytes", now)
			}
		})
	}
}

func TestDelaysStillVerify(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(13, 10*tSlotSize)})
	dst := t.TempDir()
	slow := func(i int, _ []byte) transfertest.Fault { time.Sleep(time.Millisecond); return transfertest.Deliver }
	o := pair(t, smallReceiver(dst), &transfer.Sender{},
		plan(t, filepath.Join(src, "f")),
		&transfertest.Options{Faults: transfertest.Faults{Message: slow, Write: func(i int, b []byte) transfertest.Fault { return slow(i, b) }}},
		&transfertest.Options{Faults: transfertest.Faults{Message: slow}})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	sameTree(t, src, dst)
}

func TestStalledPeerTimesOut(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(14, 10*tSlotSize)})
	dst := t.TempDir()
	r := smallReceiver(dst)
	r.IdleTimeout = 200 * time.Millisecond
	// The sender's confirmation of a resume offset is held back forever: the
	// receiver waits for it and gives up.
	tree(t, dst, map[string][]byte{rdcp.PartialName("f"): randBytes(14, 10*tSlotSize)[:tSlotSize]})
	s := &transfer.Sender{Resume: true, IdleTimeout: 5 * time.Second}
	o := pair(t, r, s, plan(t, filepath.Join(src, "f")), &transfertest.Options{Faults: transfertest.Faults{Message: faultAt(2, transfertest.Hold)}}, &transfertest.Options{})
	if !errors.Is(o.rerr, transfer.ErrPeerGone) || !strings.Contains(o.rerr.Error(), "nothing from the peer") {
		t.Errorf("receiver: %v, want an idle timeout", o.rerr)
	}
	if o.serr == nil {
		t.Error("sender succeeded")
	}
	if exists(filepath.Join(dst, "f")) {
		t.Error("final file exists")
	}
}

func TestSourceShrinksWhileSending(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(15, 10*tSlotSize)})
	dst := t.TempDir()
	p := filepath.Join(src, "f")
	o := pair(t, smallReceiver(dst), &transfer.Sender{}, plan(t, p), &transfertest.Options{Faults: transfertest.Faults{Write: func(i int, _ []byte) transfertest.Fault {
		if i == 2 {
			os.Truncate(p, 3*tSlotSize+10)
		}
		return transfertest.Deliver
	}}}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	f := o.srep.Files[0]
	if f.Verified || f.Err == nil || !strings.Contains(f.Err.Error(), "shrink") {
		t.Errorf("verified=%v err=%v, want a read error about shrinking", f.Verified, f.Err)
	}
	if r := o.rrep.Files[0]; !errors.Is(r.Err, transfer.ErrAborted) {
		t.Errorf("receiver: %v, want ErrAborted", r.Err)
	}
	if exists(filepath.Join(dst, "f")) {
		t.Error("final file exists")
	}
}

func TestSenderCancelled(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(16, 30*tSlotSize)})
	dst := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, rt := transfertest.Pipe(&transfertest.Options{Faults: transfertest.Faults{Write: func(i int, _ []byte) transfertest.Fault {
		if i == 7 {
			cancel()
		}
		return transfertest.Deliver
	}}}, &transfertest.Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := smallReceiver(dst).ServeConn(context.Background(), rt)
		rt.Close()
		errc <- err
	}()
	_, err := (&transfer.Sender{}).Send(ctx, st, plan(t, filepath.Join(src, "f")))
	st.Close() // what rdmacp does on Ctrl-C
	if !errors.Is(err, context.Canceled) {
		t.Errorf("sender: %v, want context.Canceled", err)
	}
	if err := <-errc; !errors.Is(err, transfer.ErrPeerGone) {
		t.Errorf("receiver: %v, want ErrPeerGone", err)
	}
	if exists(filepath.Join(dst, "f")) {
		t.Error("final file exists")
	}
	if !exists(filepath.Join(dst, rdcp.PartialName("f"))) {
		t.Error("partial copy not kept for --resume")
	}
}
