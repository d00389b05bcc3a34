// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/labtest/rtnl"
)

// cTool returns a command running the host's C tool name (labtest.HostTool).
func cTool(t *testing.T, ctx context.Context, name string, args ...string) *exec.Cmd {
	t.Helper()
	return labtest.HostTool(t, ctx, name, args...)
}

// runTool runs a C tool to completion and returns its standard output.
func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := cTool(t, ctx, name, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// setLinkUp sets a network interface administratively up or down with
// rtnetlink (`ip link set NAME up|down`).
func setLinkUp(t *testing.T, name string, up bool) {
	t.Helper()
	rc, err := rtnl.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if up {
		err = rc.SetUp(name)
	} else {
		err = rc.SetDown(name)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 50 ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// labNetdev is the netdev under the lab's rxe device (labtest.Env.Netdev):
// inside the lab it must be known; on another RDMA host the test is skipped.
func labNetdev(t *testing.T, env labtest.Env) string {
	t.Helper()
	if env.Netdev == "" {
		labtest.Missing(t, "needs the lab's netdev (RDMALAB_NETDEV): run it with `go run ./cmd/rdmalab test ./tools/devinfo`")
	}
	return env.Netdev
}
