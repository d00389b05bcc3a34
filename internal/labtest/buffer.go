// Copyright 2026 The rdmago Authors.

package labtest

import (
	"bytes"
	"sync"
)

// Buffer collects a program's output (cmd.Stdout, cmd.Stderr) while the
// test reads what arrived so far: a bytes.Buffer safe for a writer and a
// reader at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
