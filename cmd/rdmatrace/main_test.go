// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadPcap(t *testing.T) {
	var out bytes.Buffer
	if err := readPcap(&out, "../../tools/trace/ibpkt/testdata/rping-6.1-two-nodes.pcap", 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 41 {
		t.Fatalf("%d lines, want 41:\n%s", len(lines), out.String())
	}
	want := "0.094281 10.77.0.1:50259 > 10.77.0.2:4791 RC SEND Only QP=0x000011 PSN=5849853 A len=16"
	if lines[3] != want {
		t.Errorf("line 4:\n got %q\nwant %q", lines[3], want)
	}
	out.Reset()
	if err := readPcap(&out, "../../tools/trace/ibpkt/testdata/rping-6.1-two-nodes.pcap", 2); err != nil || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("-c 2 printed %q, %v", out.String(), err)
	}
	if err := readPcap(&out, "main.go", 0); err == nil || !strings.Contains(err.Error(), "not a pcap file") {
		t.Errorf("Go source read as pcap: %v", err)
	}
}

func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		run  func([]string) error
		args []string
		want string
	}{
		{runTrace, []string{"--interval", "1s"}, "--interval needs --summary"},
		{runTrace, []string{"extra"}, "unexpected argument"},
		{runTrace, []string{"--dev", "nosuchdev0"}, "no such RDMA device"},
		{runTrace, []string{"--duration", "-1s"}, "must not be negative"},
		{runCapture, []string{}, "capture needs -i IFACE"},
		{runCapture, []string{"-r", "x.pcap", "-i", "lo"}, "does not go with -i"},
		{runCapture, []string{"-i", "lo", "-c", "-1"}, "must not be negative"},
		{runProbes, []string{"x"}, "takes no arguments"},
	} {
		err := tc.run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
