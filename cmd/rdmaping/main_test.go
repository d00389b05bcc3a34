// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestExpandArgs(t *testing.T) {
	got := expandArgs([]string{"-vVd", "-C", "3", "-a", "10.0.0.1", "-s", "--mode", "send", "-Vx"})
	want := []string{"-v", "-V", "-d", "-C", "3", "-a", "10.0.0.1", "-s", "--mode", "send", "-Vx"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
		port int
	}{
		{[]string{"-s"}, "", 7174},
		{[]string{"-c", "-a", "10.0.0.1", "-vV", "-C", "3"}, "", 7174},
		{[]string{"-c"}, "needs the server's address", 0},
		{[]string{"-s", "-c"}, "exactly one", 0},
		{[]string{"-a", "x"}, "exactly one", 0},
		{[]string{"-s", "--mode", "rdmacs"}, "", 7471},
		{[]string{"-s", "--mode", "write", "--tcp"}, "", 18515},
		{[]string{"-s", "--tcp"}, "", 18515}, // ibv_rc_pingpong
		{[]string{"-c", "-a", "10.0.0.1", "--tcp", "--qp-type", "ud"}, "", 18515},
		{[]string{"-s", "--tcp", "--srq", "16"}, "", 18515},
		{[]string{"-s", "--tcp", "--qp-type", "xrc"}, "unknown --qp-type", 0},
		{[]string{"-s", "--tcp", "--srq", "4", "--qp-type", "uc"}, "QPs are RC", 0},
		{[]string{"-s", "--tcp", "--srq", "256"}, "give 1 to 255", 0},
		{[]string{"-s", "--tcp", "--mode", "send", "--qp-type", "uc"}, "--tcp without --mode", 0},
		{[]string{"-s", "--qp-type", "ud"}, "--tcp without --mode", 0},
		{[]string{"-s", "--tcp", "--mode", "rdmacs"}, "ibv_*_pingpong", 0},
		{[]string{"-c", "--mcast", "239.1.2.3"}, "", 7174}, // mckey -s: no server address
		{[]string{"-s", "--mcast", "239.1.2.3", "--tcp"}, "takes no --mode", 0},
		{[]string{"-s", "--mcast", "239.1.2.3", "--send-only"}, "multicast sender", 0},
		{[]string{"-s", "--ud", "--mode", "send"}, "takes no --mode", 0},
		{[]string{"-s", "--mode", "nope"}, "unknown --mode", 0},
		{[]string{"-s", "-p", "70000"}, "out of range", 0},
		{[]string{"-s", "--tcp", "--peer-timeout", "0s"}, "--peer-timeout 0s: give a positive duration", 0},
		{[]string{"-c", "--mcast", "239.1.2.3", "--settle", "-1s"}, "--settle -1s", 0},
		{[]string{"-c", "--mcast", "239.1.2.3", "--settle", "0s"}, "", 7174},
		{[]string{"-s", "extra"}, "unexpected arguments", 0},
	} {
		c, err := parse(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if c.port != tc.port {
			t.Errorf("%q: port %d, want %d", tc.args, c.port, tc.port)
		}
	}
}

func TestBadSizeFailsBeforeConnecting(t *testing.T) {
	// rping's -S range is checked before any device is touched.
	if code := run(context.Background(), []string{"-s", "-S", "10"}, io.Discard, io.Discard); code != 1 {
		t.Fatalf("run with -S 10: exit %d, want 1", code)
	}
}

func TestMcastNeedsAGroup(t *testing.T) {
	var errb strings.Builder
	if code := run(context.Background(), []string{"-s", "--mcast", "10.1.1.1"}, io.Discard, &errb); code != 1 || !strings.Contains(errb.String(), "want a multicast IP address") {
		t.Fatalf("--mcast with a unicast address: exit %d, %q", code, errb.String())
	}
}
