// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
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

// rsocketsPeer is what rdmacp says an rsockets peer is.
const rsocketsPeer = "rsockets (rcopy, rstream or a program under librspreload)"

// TestLabSendToRcopy: `rdmacp send` to rdma-core's rcopy server (an
// rsockets server: its raccept rejects, without a word, a request that
// carries no rs_conn_data) fails within a second or so, saying what the
// receiver seems to be and what to run there. Before, the sender took the
// rejects for a receiver not listening yet, retried for the whole --wait
// and then said that no rdmacp receiver listens.
func TestLabSendToRcopy(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const port = "18630"
	sent := make(chan struct{}) // one node: the sender is done
	env.RunRoles(t, func() error {
		cmd := labtest.HostTool(t, ctx, "rcopy", "-p", port)
		var out labtest.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("rcopy server: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() {
			cmd.Process.Kill()
			<-exited
		}()
		// rcopy says nothing about the requests it rejects: serve until
		// the sender is done (one node) or for longer than its --wait.
		select {
		case <-sent:
		case <-time.After(45 * time.Second):
		case err := <-exited:
			exited <- err
			return fmt.Errorf("the rcopy server exited (%v): %q", err, out.String())
		}
		t.Logf("rcopy server: %q", out.String())
		return nil
	}, func() error {
		defer close(sent)
		f := filepath.Join(t.TempDir(), "f")
		os.WriteFile(f, labData(), 0o644)
		start := time.Now()
		r := runCmd(ctx, rdmaNet{}, "send", "--wait", "40s", f, env.Peer+":"+port)
		t.Logf("rdmacp send exit %d after %v: %s", r.code, time.Since(start).Round(time.Millisecond), r.stderr)
		for _, want := range []string{"the program at " + env.Peer + ":" + port + " rejected 5 connection requests in a row without a word",
			rsocketsPeer, "it is not an rdmacp receiver", "rdmacp:   run `rdmacp recv DIR` there"} {
			if r.code != 1 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "--resume") || strings.Contains(r.stderr, "no rdmacp receiver listens") {
				return fmt.Errorf("rdmacp send to rcopy: exit %d, stderr %q; want 1 and %q, neither --resume nor \"no rdmacp receiver listens\"", r.code, r.stderr, want)
			}
		}
		return nil
	})
}

// rsConnData is an rs_conn_data as librdmacm lays it out (version 1,
// RS_CONN_FLAG_IOMAP, 384 credits, a 2-entry target SGL, a 64 KiB first
// buffer: rsocket's TestConnDataGolden).
var rsConnData, _ = hex.DecodeString("0102018000000000" + "00007f0011223340" + "0000123400000002" + "00007f0055667700" + "0000abcd00010000")

// TestLabRcopyToRecv: rdma-core's rcopy client connecting to `rdmacp recv`
// is refused at once (rcopy fails with its own error), the receiver says
// on stderr that a peer speaking rsockets tried, and it still serves the
// honest sender that comes next. Before, the receiver accepted rcopy's
// request: rcopy's data writes met a receiver waiting for HELLO, and
// nothing said why.
func TestLabRcopyToRecv(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const port = "18631"
	data := labData()
	env.RunRoles(t, func() error {
		dst := t.TempDir()
		r := runCmd(ctx, rdmaNet{}, "recv", "--once", "--listen", env.Addr+":"+port, dst)
		t.Logf("rdmacp recv exit %d: %s", r.code, r.stderr)
		want := "a peer speaking " + rsocketsPeer + " tried to connect from "
		if n := strings.Count(r.stderr, want); r.code != 0 || n != 2 {
			return fmt.Errorf("rdmacp recv: exit %d, %d refusals, stderr %q; want 0 and 2 lines %q (the probe's, rcopy's)", r.code, n, r.stderr, want)
		}
		if got, err := os.ReadFile(filepath.Join(dst, "f")); err != nil || !bytes.Equal(got, data) {
			return fmt.Errorf("the honest sender's file: %d bytes (%v), want %d", len(got), err, len(data))
		}
		return nil
	}, func() error {
		addr := env.Peer + ":" + port
		// Wait for the receiver with a request that carries rs_conn_data,
		// as rcopy's does: it must be rejected, not accepted.
		c, err := labtest.Retry(ctx, func(err error) bool { return errors.Is(err, cm.ErrNoListener) },
			func() (*cm.Conn, error) { return cm.Dial(ctx, addr, &cm.Options{PrivateData: rsConnData}) })
		if err == nil {
			c.Close()
			return errors.New("rdmacp recv accepted a connection request carrying rs_conn_data")
		}
		if !errors.Is(err, cm.ErrRejected) {
			return fmt.Errorf("dial with rs_conn_data: %v, want REJECTED", err)
		}
		f := filepath.Join(t.TempDir(), "f")
		os.WriteFile(f, data, 0o644)
		cmd := labtest.HostTool(t, ctx, "rcopy", f, env.Peer+":/tmp/rcopy-refused", "-p", port)
		out, err := cmd.CombinedOutput()
		t.Logf("rcopy client: %v: %q", err, out)
		if err == nil {
			return fmt.Errorf("rcopy to rdmacp recv succeeded: %q", out)
		}
		r := runCmd(ctx, rdmaNet{}, "send", "--wait", "60s", f, addr)
		if r.code != 0 {
			return fmt.Errorf("the honest sender after rcopy: exit %d: %s", r.code, r.stderr)
		}
		return nil
	})
}
