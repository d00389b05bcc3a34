package transfer_test

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

func TestHappyPath(t *testing.T) {
	src := t.TempDir()
	const slots, slotSize = 4, 4096
	window := slots * slotSize
	files := map[string][]byte{
		"top/empty":              {},
		"top/one":                {'x'},
		"top/a/b/c/deep.bin":     randBytes(1, 3*slotSize+17),
		"top/exact":              randBytes(2, window),
		"top/big.bin":            randBytes(3, 40*window+123), // the window many times over
		"top/a/sibling":          randBytes(4, slotSize),
		"top/with space & ü.txt": []byte("hello"),
	}
	tree(t, src, files)
	os.MkdirAll(filepath.Join(src, "top", "emptydir"), 0o750)
	os.Chmod(filepath.Join(src, "top", "one"), 0o600)
	old := time.Date(2001, 2, 3, 4, 5, 6, 789, time.UTC)
	os.Chtimes(filepath.Join(src, "top", "exact"), old, old)
	single := tree(t, t.TempDir(), map[string][]byte{"single": randBytes(5, 5000)})

	items := plan(t, filepath.Join(src, "top"), filepath.Join(single, "single"))
	dst := t.TempDir()
	var got []transfer.FileResult
	// --verify sha256: the digests checked below are the SHA-256s
	// (TestHappyPathCRC32C runs the default).
	r := &transfer.Receiver{Dir: dst, Slots: slots, SlotSize: slotSize, Verify: transfer.VerifySHA256, OnFile: func(f transfer.FileResult) { got = append(got, f) }}
	var progress []transfer.Progress
	s := &transfer.Sender{Progress: func(p transfer.Progress) { progress = append(progress, p) }}
	o := pair(t, r, s, items, &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send: %v; receive: %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, len(items))
	sameTree(t, filepath.Join(src, "top"), filepath.Join(dst, "top"))
	sameTree(t, single, dst+"/")
	noPartials(t, dst)
	if fi, err := os.Stat(filepath.Join(dst, "top", "emptydir")); err != nil || !fi.IsDir() {
		t.Errorf("empty directory not created: %v", err)
	}

	// Digests are the files' SHA-256 at both ends.
	for _, f := range o.srep.Files {
		if f.Kind != transfer.KindFile {
			continue
		}
		want := sha256.Sum256(files[f.Name])
		if f.Name == "single" {
			want = sha256.Sum256(randBytes(5, 5000))
		}
		if f.Digest != want {
			t.Errorf("%s: sender digest %x, want %x", f.Name, f.Digest, want)
		}
	}
	if len(got) != len(items) {
		t.Errorf("receiver reported %d files, want %d", len(got), len(items))
	}
	for _, f := range got {
		if !f.Verified || f.Err != nil {
			t.Errorf("receiver: %s not verified: %v", f.Name, f.Err)
		}
	}
	var total int64
	for _, it := range items {
		total += it.Size
	}
	if o.srep.Bytes != total || o.rrep.Bytes != total {
		t.Errorf("moved %d (sender) / %d (receiver) bytes, want %d", o.srep.Bytes, o.rrep.Bytes, total)
	}
	if last := progress[len(progress)-1]; last.Done != total || last.Total != total || !last.Finished {
		t.Errorf("last progress %+v, want done=total=%d", last, total)
	}

	// Memory: one window at a time on each end, all released.
	for name, tr := range map[string]*transfertest.Transport{"receiver": o.rT, "sender": o.sT} {
		now, peak, count := tr.Registered()
		if peak > window {
			t.Errorf("%s registered %d bytes at once, window is %d", name, peak, window)
		}
		if now != 0 {
			t.Errorf("%s still has %d bytes registered", name, now)
		}
		if count == 0 {
			t.Errorf("%s registered nothing", name)
		}
	}
	// The receiver registers a window per transfer with data (not for
	// directories or empty files).
	if _, _, count := o.rT.Registered(); count != 7 {
		t.Errorf("receiver registered %d windows, want 7 (one per non-empty file)", count)
	}
}

func TestExistingFileNotOverwritten(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"f": []byte("new content"), "g": []byte("other")})
	dst := tree(t, t.TempDir(), map[string][]byte{"f": []byte("old")})
	o := pair(t, &transfer.Receiver{Dir: dst}, &transfer.Sender{}, plan(t, filepath.Join(src, "f"), filepath.Join(src, "g")), &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send: %v; receive: %v", o.serr, o.rerr)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "old" {
		t.Errorf("existing file overwritten: %q", b)
	}
	f := o.srep.Files[0]
	if f.Verified || !errors.Is(f.Err, transfer.ErrExists) {
		t.Errorf("f: verified=%v err=%v, want ErrExists", f.Verified, f.Err)
	}
	if !o.srep.Files[1].Verified {
		t.Errorf("g after a refused f: %v", o.srep.Files[1].Err)
	}
	if o.srep.OK(2) {
		t.Error("report OK with a refused file")
	}
	noPartials(t, dst)

	// --force replaces it.
	o = pair(t, &transfer.Receiver{Dir: dst, Force: true}, &transfer.Sender{}, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, &transfertest.Options{})
	allVerified(t, o.srep, 1)
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "new content" {
		t.Errorf("--force did not replace: %q", b)
	}
}

func TestForceNeverReplacesDirectory(t *testing.T) {
	src := tree(t, t.TempDir(), map[string][]byte{"d": []byte("file")})
	dst := t.TempDir()
	os.MkdirAll(filepath.Join(dst, "d", "keep"), 0o755)
	o := pair(t, &transfer.Receiver{Dir: dst, Force: true}, &transfer.Sender{}, plan(t, filepath.Join(src, "d")), &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil {
		t.Fatal(o.serr)
	}
	if f := o.srep.Files[0]; !errors.Is(f.Err, transfer.ErrNotDir) {
		t.Errorf("err %v, want ErrNotDir", f.Err)
	}
	if !exists(filepath.Join(dst, "d", "keep")) {
		t.Error("directory replaced")
	}
}

// Slots from parallelHashMin up: with --verify sha256 the receiver hashes in
// a second goroutine while it writes; a corrupted chunk must still be
// caught.
func TestLargeSlotsParallelHash(t *testing.T) {
	const slotSize = 2 * transfer.ParallelHashMin
	data := randBytes(17, 9*slotSize+5)
	src := tree(t, t.TempDir(), map[string][]byte{"f": data})
	dst := t.TempDir()
	r := &transfer.Receiver{Dir: dst, Slots: 3, SlotSize: slotSize, Verify: transfer.VerifySHA256}
	o := pair(t, r, &transfer.Sender{}, plan(t, filepath.Join(src, "f")), &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	sameTree(t, src, dst)

	dst = t.TempDir()
	r.Dir = dst
	o = pair(t, r, &transfer.Sender{}, plan(t, filepath.Join(src, "f")), &transfertest.Options{Faults: transfertest.Faults{Write: func(i int, b []byte) transfertest.Fault {
		if i == 4 {
			b[len(b)-1] ^= 0x80
		}
		return transfertest.Deliver
	}}}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	if f := o.srep.Files[0]; f.Verified || !errors.Is(f.Err, transfer.ErrDigest) {
		t.Errorf("corrupted large chunk: verified=%v %v", f.Verified, f.Err)
	}
}
