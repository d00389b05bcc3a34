// Copyright 2026 The rdmago Authors.

package labtest

import (
	"strings"
	"sync"
	"testing"
)

// TestBuffer: a writer and a reader at once (run with -race), and every
// byte written is there at the end, in order.
func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 100 {
			b.Write([]byte("ab"))
		}
	}()
	for range 100 {
		if s := b.String(); strings.Trim(s, "ab") != "" {
			t.Fatalf("read %q", s)
		}
	}
	wg.Wait()
	if got, want := b.String(), strings.Repeat("ab", 100); got != want {
		t.Errorf("got %d bytes %q..., want %d", len(got), got[:min(len(got), 8)], len(want))
	}
}
