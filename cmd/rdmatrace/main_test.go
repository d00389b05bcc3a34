// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestFlagErrors(t *testing.T) {
	ctx := context.Background()
	traceCmd := func(a []string) error { return runTrace(ctx, a, io.Discard, io.Discard) }
	captureCmd := func(a []string) error { return runCapture(ctx, a, io.Discard, io.Discard) }
	recordCmd := func(a []string) error { return runRecord(ctx, a, io.Discard) }
	probesCmd := func(a []string) error { return runProbes(a, io.Discard, io.Discard) }
	for _, tc := range []struct {
		run  func([]string) error
		args []string
		want string
	}{
		{traceCmd, []string{"--interval", "1s"}, "--interval needs --summary"},
		{traceCmd, []string{"extra"}, "unexpected argument"},
		{traceCmd, []string{"--dev", "nosuchdev0"}, "no such RDMA device"},
		{traceCmd, []string{"--duration", "-1s"}, "must not be negative"},
		{captureCmd, []string{}, "capture needs -i IFACE"},
		{captureCmd, []string{"-r", "x.pcap", "-i", "lo"}, "does not go with -i"},
		{captureCmd, []string{"-i", "lo", "-c", "-1"}, "must not be negative"},
		{captureCmd, []string{"-r", "../../tools/trace/ibpkt/testdata/rping-6.1-two-nodes.pcap", "-c", "-1"}, "must not be negative"},
		{captureCmd, []string{"-i", "lo", "--duration", "-1s"}, "must not be negative"},
		{traceCmd, []string{"--summary", "--interval", "-1s"}, "must not be negative"},
		{probesCmd, []string{"x"}, "takes no arguments"},
		{traceCmd, []string{"--no-rxe", "--rxe-all"}, "does not go with --rxe-all"},
		{traceCmd, []string{"--rxe-fentry", "--rxe-kprobes"}, "contradict each other"},
		{recordCmd, []string{"-o", "x.rec", "--no-rxe", "--rxe-all"}, "does not go with --rxe-all"},
	} {
		err := tc.run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
