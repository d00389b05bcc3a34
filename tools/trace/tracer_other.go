// Copyright 2026 The rdmago Authors.

//go:build !linux

package trace

import (
	"context"
	"fmt"
	"runtime"

	"github.com/rdmago/rdmago/internal/sys"
)

// Tracer is the eBPF tracer; off Linux none can be made.
type Tracer struct{}

var errNotLinux = fmt.Errorf("tracing needs Linux's eBPF and kprobes, and this is %s: %w", runtime.GOOS, sys.ErrNotSupported)

// New fails off Linux with an error matching uverbs.ErrNotSupported.
func New(opts Options) (*Tracer, error) { return nil, errNotLinux }

// Probes reports nothing: off Linux there is no Tracer.
func (t *Tracer) Probes() []Probe { return nil }

// Read fails: off Linux there is no Tracer.
func (t *Tracer) Read(ctx context.Context) (Event, error) { return Event{}, errNotLinux }

// Lost fails: off Linux there is no Tracer.
func (t *Tracer) Lost() (ringFull, inflightFull uint64, err error) { return 0, 0, errNotLinux }

// Drain fails: off Linux there is no Tracer.
func (t *Tracer) Drain(use func(Event)) error { return errNotLinux }

// Dropped fails: off Linux there is no Tracer.
func (t *Tracer) Dropped() ([]Dropped, error) { return nil, errNotLinux }

// RXECounts fails: off Linux there is no Tracer.
func (t *Tracer) RXECounts() ([]RXECount, error) { return nil, errNotLinux }

// Close does nothing.
func (t *Tracer) Close() error { return nil }

// monotonicNow is 0: off Linux there are no event time stamps to match.
func monotonicNow() uint64 { return 0 }
