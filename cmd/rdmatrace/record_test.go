// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTimelineCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "page.html")
	td := "../../tools/timeline/testdata/"
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"timeline", td + "synthetic-node0.rec", td + "synthetic-node1.rec", "-o", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "13 packets") || !strings.Contains(stdout.String(), "± 30µs") {
		t.Errorf("output %q: want the packet count and the clock alignment", stdout.String())
	}
	page, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(page, []byte("NAK PSN 206")) {
		t.Errorf("page (%d bytes, %v) lacks the NAK", len(page), err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"timeline", td + "synthetic-node0.rec"}, "-o PAGE.html"},
		{[]string{"timeline", "-o", out, "record_test.go"}, "not an rdmatrace recording"},
		{[]string{"record"}, "record needs -o FILE"},
		{[]string{"record", "-o", out, "extra"}, "unexpected argument"},
	} {
		stderr.Reset()
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
