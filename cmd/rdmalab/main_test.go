// Copyright 2026 The rdmago Authors.

package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rdmago/rdmago/tools/lab"
)

func TestAppendFlag(t *testing.T) {
	for _, tc := range []struct {
		def  []string
		args []string
		want []string
	}{
		{nil, nil, nil},
		{nil, []string{"--append", "clocksource=tsc tsc=reliable"}, []string{"clocksource=tsc", "tsc=reliable"}},
		{lab.TSCArgs, nil, lab.TSCArgs},
		{lab.TSCArgs, []string{"--append="}, nil},
		{lab.TSCArgs, []string{"-append", "nokaslr"}, []string{"nokaslr"}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		got := append([]string(nil), tc.def...)
		appendFlag(fs, &got)
		if err := fs.Parse(tc.args); err != nil {
			t.Errorf("default %q, %q: %v", tc.def, tc.args, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("default %q, %q (-want +got):\n%s", tc.def, tc.args, diff)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o lab.Options
	labFlags(fs, &o, 0, io.Discard)
	if err := fs.Parse([]string{"--append", "quiet console=tty0"}); err == nil || !strings.Contains(err.Error(), `kernel parameter "console=tty0": the lab sets console itself`) {
		t.Errorf("labFlags --append console=tty0: %v, want the kernel parameter's error", err)
	}
	if err := fs.Parse([]string{"--append", "clocksource=tsc"}); err != nil || !cmp.Equal(o.Append, []string{"clocksource=tsc"}) {
		t.Errorf("labFlags --append clocksource=tsc: %v, Append %q", err, o.Append)
	}
}

func TestHasBoolFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--icount"}, true},
		{[]string{"-icount"}, true},
		{[]string{"--icount=true"}, true},
		{[]string{"--icount=false"}, false},
		{[]string{"icount"}, false},
		{[]string{"--nodes", "1", "--short", "--icount"}, true},
		{[]string{"--", "--icount"}, false},
		{[]string{"--icounts"}, false},
	} {
		if got := hasBoolFlag(tc.args, "icount"); got != tc.want {
			t.Errorf("hasBoolFlag(%q, icount) = %t, want %t", tc.args, got, tc.want)
		}
	}
}

// TestBenchOptionsICountKernel: under --icount the default tests are what
// the instruction clock can time on --kernel (send_lat's half-polling
// cases on 6.1 only), while --tests is taken as given (and refused later
// by the bench's check, with the reason).
func TestBenchOptionsICountKernel(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		sendLat  bool
		writeLat bool
	}{
		{[]string{"--icount"}, true, false},
		{[]string{"--icount", "--kernel", "6.1"}, true, false},
		{[]string{"--icount", "--kernel", "6.12"}, false, false},
		{[]string{"--icount", "--kernel", "6.12", "--tests", "send_lat"}, true, false},
		{[]string{"--kernel", "6.12"}, true, true},
	} {
		o, ok := benchOptions(tc.args, io.Discard)
		if !ok {
			t.Fatalf("%q: refused", tc.args)
		}
		if slices.Contains(o.Tests, "send_lat") != tc.sendLat || slices.Contains(o.Tests, "write_lat") != tc.writeLat {
			t.Errorf("%q: tests %v; want send_lat %t, write_lat %t", tc.args, o.Tests, tc.sendLat, tc.writeLat)
		}
	}
}
