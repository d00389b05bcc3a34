package transfer_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// pair runs r on one end of a transfertest.Pipe and s on the other, and returns both
// outcomes. The sender's end is closed after Send, as rdmacp does.
type outcome struct {
	srep *transfer.Report
	serr error
	rrep *transfer.ConnReport
	rerr error
	sT   *transfertest.Transport
	rT   *transfertest.Transport
}

func pair(t *testing.T, r *transfer.Receiver, s *transfer.Sender, items []transfer.Item, scfg, rcfg *transfertest.Options) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, rt := transfertest.Pipe(scfg, rcfg)
	var o outcome
	o.sT, o.rT = st, rt
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer rt.Close()
		o.rrep, o.rerr = r.ServeConn(ctx, rt)
	}()
	o.srep, o.serr = s.Send(ctx, st, items)
	st.Close()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("receiver did not finish")
	}
	return o
}

// tree writes files (name → content) under dir and returns dir.
func tree(t *testing.T, dir string, files map[string][]byte) string {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

func plan(t *testing.T, paths ...string) []transfer.Item {
	t.Helper()
	items, skipped, err := transfer.Plan(paths...)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	return items
}

// sameTree checks that every regular file and directory under src exists
// under dst with the same content, permission bits and modification time.
func sameTree(t *testing.T, src, dst string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		q := filepath.Join(dst, rel)
		si, err := os.Stat(p)
		if err != nil {
			return err
		}
		di, err := os.Lstat(q)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		if d.IsDir() {
			if !di.IsDir() {
				t.Errorf("%s: not a directory at the receiver", rel)
			}
			return nil
		}
		n++
		a, _ := os.ReadFile(p)
		b, _ := os.ReadFile(q)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: content differs (%d vs %d bytes)", rel, len(a), len(b))
		}
		if si.Mode().Perm() != di.Mode().Perm() {
			t.Errorf("%s: mode %v, want %v", rel, di.Mode().Perm(), si.Mode().Perm())
		}
		if !si.ModTime().Equal(di.ModTime()) {
			t.Errorf("%s: mtime %v, want %v", rel, di.ModTime(), si.ModTime())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("sameTree compared no files")
	}
}

// noPartials fails if any partial copy is left under dir.
func noPartials(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, rdcp.PartialSuffix) {
			t.Errorf("partial copy left: %s", p)
		}
		return nil
	})
}

func allVerified(t *testing.T, rep *transfer.Report, n int) {
	t.Helper()
	if rep == nil {
		t.Fatal("no report")
	}
	for _, f := range rep.Files {
		if !f.Verified {
			t.Errorf("%s: not verified: %v", f.Name, f.Err)
		}
	}
	if !rep.OK(n) {
		t.Fatalf("report not OK: %d of %d results", len(rep.Files), n)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// faultAt is a Faults hook that does f to the n-th message or write (from 0)
// and delivers the others.
func faultAt(n int, f transfertest.Fault) func(int, []byte) transfertest.Fault {
	return func(i int, _ []byte) transfertest.Fault {
		if i == n {
			return f
		}
		return transfertest.Deliver
	}
}
