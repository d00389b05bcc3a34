// Copyright 2026 The rdmago Authors.

package lab

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNestedModule: a pattern in a directory with a go.mod of its own
// (./examples) is listed and built in that directory; every other is the
// main module's.
func TestNestedModule(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"examples/grpcecho", "rsocket"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"go.mod", "examples/go.mod"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("module x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	for _, c := range []struct{ pattern, dir, rel string }{
		{"./...", "", "./..."},
		{".", "", "."},
		{"./rsocket", "", "./rsocket"},
		{"github.com/rdmago/rdmago/rsocket", "", "github.com/rdmago/rdmago/rsocket"},
		{"./examples/...", "examples", "./..."},
		{"./examples", "examples", "."},
		{"./examples/grpcecho", "examples", "./grpcecho"},
		{"./examples/grpcecho/...", "examples", "./grpcecho/..."},
	} {
		if d, r := nestedModule(c.pattern); d != c.dir || r != c.rel {
			t.Errorf("nestedModule(%q) = %q, %q; want %q, %q", c.pattern, d, r, c.dir, c.rel)
		}
	}
}
