// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// labData is the same on every node.
func labData() []byte {
	b := make([]byte, 3<<20+7)
	for i := range b {
		b[i] = byte(i*7 + i>>10)
	}
	return b
}

// TestLabCLI runs `rdmacp recv --once` and `rdmacp send` over real RDMA:
// in one process with one node, across the wire with two (node 0
// receives, node 1 sends).
func TestLabCLI(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	two := os.Getenv("RDMALAB_NODES") == "2"
	listen := fmt.Sprintf("%s:18620", env.Addr)
	peer := fmt.Sprintf("%s:18620", env.Peer)
	data := labData()

	recv := func() {
		dst := t.TempDir()
		// --verify sha256: the sender's summary is checked against the
		// data's SHA-256 (the default, CRC32C, runs in transfer/rdma).
		r := runCmd(ctx, rdmaNet{}, "recv", "--once", "--json", "--listen", listen, "--slot-size", "256K", "--slots", "8", "--verify", "sha256", dst)
		if r.code != 0 {
			t.Errorf("recv exit %d: %s", r.code, r.stderr)
		}
		var s recvSummary
		if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || !s.OK || s.Verified != 2 {
			t.Errorf("recv summary %q (%v)", r.stdout, err)
		}
		got, err := os.ReadFile(filepath.Join(dst, "d", "data.bin"))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("received %d bytes (%v), want %d with SHA-256 %x", len(got), err, len(data), sha256.Sum256(data))
		}
	}
	send := func() {
		src := t.TempDir()
		os.MkdirAll(filepath.Join(src, "d"), 0o755)
		os.WriteFile(filepath.Join(src, "d", "data.bin"), data, 0o644)
		r := runCmd(ctx, rdmaNet{}, "send", "--json", "--wait", "90s", filepath.Join(src, "d"), peer)
		if r.code != 0 {
			t.Errorf("send exit %d: %s", r.code, r.stderr)
		}
		var s sendSummary
		if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || !s.OK || s.Verified != 2 || s.Bytes != int64(len(data)) {
			t.Errorf("send summary %q (%v)", r.stdout, err)
		}
		want, found := fmt.Sprintf("%x", sha256.Sum256(data)), false
		for _, f := range s.Files {
			if f.Name == "d/data.bin" {
				found = true
				if f.SHA256 != want {
					t.Errorf("digest %s, want %s", f.SHA256, want)
				}
			}
		}
		if !found {
			t.Errorf("send summary %q has no d/data.bin", r.stdout)
		}
		t.Logf("%d bytes in %.2fs (%.1f MB/s under emulation), %d dial retries", s.Bytes, s.Seconds, s.Throughput/1e6, s.DialRetries)
	}
	switch {
	case two && env.Node == "0":
		recv()
	case two:
		send()
	default:
		done := make(chan struct{})
		go func() { defer close(done); recv() }()
		send()
		<-done
	}
}

// TestLabCLINoListener: a send to a port nobody listens on fails with exit
// status 1 and says what to do.
func TestLabCLINoListener(t *testing.T) {
	env := labtest.Require(t)
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, []byte("x"), 0o644)
	r := runCmd(context.Background(), rdmaNet{}, "send", "--wait", "500ms", f, env.Addr+":18699")
	if r.code != 1 || !bytes.Contains([]byte(r.stderr), []byte("start `rdmacp recv DIR` there")) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
