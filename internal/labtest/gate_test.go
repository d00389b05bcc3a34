// Copyright 2026 The rdmago Authors.

package labtest

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestGatedDocumented: every gated test and its feature is in docs/lab.md.
func TestGatedDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/lab.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, feature := range Gated {
		if !strings.Contains(string(b), "`"+name+"`") || !strings.Contains(string(b), feature) {
			t.Errorf("docs/lab.md does not list `%s` (%s) among the gated tests", name, feature)
		}
	}
}

func TestLacks(t *testing.T) {
	err := errors.New("alloc mw: not supported")
	for _, c := range []struct {
		name                string
		unsupported         bool
		wantSkip, wantFatal bool
	}{
		{"TestLabMWType1", true, true, false},
		{"TestLabMWType1/sub", true, true, false},
		{"TestLabOther", true, false, true},
		{"TestLabMWType1", false, false, true},
	} {
		r := &gateRecorder{name: c.name}
		func() {
			defer func() { recover() }() // Fatalf and Skipf end the test
			Lacks(r, err, c.unsupported)
		}()
		if r.skipped != c.wantSkip || r.failed != c.wantFatal {
			t.Errorf("%s unsupported=%v: skipped %v failed %v", c.name, c.unsupported, r.skipped, r.failed)
		}
	}
}

type gateRecorder struct {
	testing.TB
	name            string
	skipped, failed bool
}

func (r *gateRecorder) Name() string          { return r.name }
func (r *gateRecorder) Helper()               {}
func (r *gateRecorder) Skipf(string, ...any)  { r.skipped = true; panic("skip") }
func (r *gateRecorder) Fatalf(string, ...any) { r.failed = true; panic("fatal") }
func (r *gateRecorder) Fatal(...any)          { r.failed = true; panic("fatal") }
