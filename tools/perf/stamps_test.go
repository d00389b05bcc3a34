// Copyright 2026 The rdmago Authors.

package perf

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteStamps(t *testing.T) {
	name := filepath.Join(t.TempDir(), "stamps")
	if err := writeStamps(name, 2500, []int64{10, 20, 35}, []int64{0, 0, 40}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# mhz 2500\n10 0\n20 0\n35 40\n"; string(b) != want {
		t.Errorf("stamps file:\n%s\nwant:\n%s", b, want)
	}
	if err := writeStamps(filepath.Join(name, "x"), 1, []int64{1}, nil); err == nil {
		t.Error("writing under a file: no error")
	}
}
