//go:build unix

package transfer_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// The receiver's umask applies to the sender's mode.
func TestUmaskApplies(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	src := t.TempDir()
	p := filepath.Join(src, "f")
	if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o666)
	dst := t.TempDir()
	o := pair(t, smallReceiver(dst), &transfer.Sender{}, plan(t, p), &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil || o.rerr != nil {
		t.Fatalf("send %v; receive %v", o.serr, o.rerr)
	}
	allVerified(t, o.srep, 1)
	fi, err := os.Stat(filepath.Join(dst, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o640 {
		t.Errorf("mode %v, want 0640 (0666 less the umask 027)", got)
	}
}

// A file replaced by a symbolic link after planning is not followed: the
// link's target is not sent.
func TestSenderRefusesSwappedSymlink(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("not for the receiver"), 0o600)
	src := tree(t, t.TempDir(), map[string][]byte{"d/f": []byte("planned content")})
	items := plan(t, filepath.Join(src, "d"))
	f := filepath.Join(src, "d", "f")
	os.Remove(f)
	if err := os.Symlink(secret, f); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	o := pair(t, smallReceiver(dst), &transfer.Sender{}, items, &transfertest.Options{}, &transfertest.Options{})
	if o.serr != nil {
		t.Fatal(o.serr)
	}
	var res transfer.FileResult
	for _, r := range o.srep.Files {
		if r.Name == "d/f" {
			res = r
		}
	}
	if res.Verified || res.Err == nil || !strings.Contains(res.Err.Error(), "symbolic link") {
		t.Errorf("swapped file: verified=%v %v, want refused", res.Verified, res.Err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "d", "f")); err == nil {
		t.Errorf("the link's target arrived: %q", b)
	}

	// A file replaced by another regular file is refused too.
	src = tree(t, t.TempDir(), map[string][]byte{"g": []byte("planned")})
	items = plan(t, filepath.Join(src, "g"))
	os.WriteFile(filepath.Join(src, "g.new"), []byte("another file"), 0o644)
	os.Rename(filepath.Join(src, "g.new"), filepath.Join(src, "g")) // a new inode
	o = pair(t, smallReceiver(t.TempDir()), &transfer.Sender{}, items, &transfertest.Options{}, &transfertest.Options{})
	if r := o.srep.Files[0]; r.Verified || r.Err == nil || !strings.Contains(r.Err.Error(), "replaced") {
		t.Errorf("replaced file: verified=%v %v, want refused", r.Verified, r.Err)
	}
}
