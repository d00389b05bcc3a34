// Copyright 2026 The rdmago Authors.

package capture

import (
	"bytes"
	"strings"
	"testing"
)

func TestPrintFile(t *testing.T) {
	var out bytes.Buffer
	if err := PrintFile(&out, "../ibpkt/testdata/rping-6.1-two-nodes.pcap", 0); err != nil {
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
	if err := PrintFile(&out, "../ibpkt/testdata/rping-6.1-two-nodes.pcap", 2); err != nil || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("-c 2 printed %q, %v", out.String(), err)
	}
	if err := PrintFile(&out, "print.go", 0); err == nil || !strings.Contains(err.Error(), "neither a pcap nor a pcapng file") {
		t.Errorf("Go source read as pcap: %v", err)
	}
}
