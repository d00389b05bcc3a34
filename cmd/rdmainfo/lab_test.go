// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/labtest/rtnl"
)

// rdmaTool runs iproute2's rdma (labtest.HostTool).
func rdmaTool(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := labtest.HostTool(t, ctx, "rdma", args...)
	out, err := c.Output()
	if err != nil {
		t.Fatalf("rdma %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// trimLines drops trailing blanks of each line (iproute2 ends lines with a
// space).
func trimLines(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	for i := range ls {
		ls[i] = strings.TrimRight(ls[i], " ")
	}
	return strings.Join(ls, "\n")
}

// snapshot is the RDMA state link add/del must leave as it was.
func snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(rdmaTool(t, "-j", "link", "show"))
	b.WriteString(rdmaTool(t, "-j", "dev", "show"))
	for _, g := range []string{"/dev/infiniband/*", "/sys/class/infiniband/*", "/sys/class/infiniband_verbs/*", "/sys/class/net/*"} {
		m, _ := filepath.Glob(g)
		b.WriteString(strings.Join(m, " ") + "\n")
	}
	return b.String()
}

// TestLabLinkAddDel creates a veth pair, adds an rxe link on it with
// `rdmainfo link add`, checks it with iproute2's rdma, deletes it with
// `rdmainfo link del`, removes the veth, and checks that everything is as
// before.
func TestLabLinkAddDel(t *testing.T) {
	labtest.Require(t)
	before := snapshot(t)
	rc, err := rtnl.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := rc.AddVeth("rdt0", "rdt1"); err != nil {
		t.Fatal(err)
	}
	vethGone := false
	defer func() {
		if vethGone {
			return
		}
		rc.DelLink("rdt0")
	}()
	for _, n := range []string{"rdt0", "rdt1"} {
		if err := rc.SetUp(n); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(ctx, args, &out, &errb, nil)
		return code, out.String(), errb.String()
	}
	code, out, errs := cli("link", "add", "rdtest", "type", "rxe", "netdev", "rdt0", "--json")
	if code != 0 {
		t.Fatalf("link add: %d %s", code, errs)
	}
	if !strings.Contains(out, `"ifname": "rdtest"`) || !strings.Contains(out, `"netdev": "rdt0"`) {
		t.Errorf("link add --json printed:\n%s", out)
	}
	added := true
	defer func() {
		if added {
			cli("link", "del", "rdtest")
		}
	}()
	if !strings.Contains(rdmaTool(t, "link", "show"), "link rdtest/1 ") {
		t.Errorf("rdma link show does not list rdtest:\n%s", rdmaTool(t, "link", "show"))
	}
	if _, out, _ := cli("link", "show"); !strings.Contains(out, "link rdtest/1 ") || !strings.Contains(out, "netdev rdt0") {
		t.Errorf("rdmainfo link show:\n%s", out)
	}
	// rdmainfo and rdma agree on the new state too.
	_, ours, _ := cli("link", "show")
	if trimLines(ours) != trimLines(rdmaTool(t, "link", "show")) {
		t.Errorf("rdmainfo:\n%s\nrdma:\n%s", ours, rdmaTool(t, "link", "show"))
	}
	// A second rxe on the same netdev is refused with a reason.
	if code, _, errs := cli("link", "add", "rdtest2", "type", "rxe", "netdev", "rdt0"); code == 0 {
		cli("link", "del", "rdtest2")
		t.Error("a second rxe link on rdt0 was accepted")
	} else {
		t.Logf("second link: %s", errs)
	}
	if code, _, errs := cli("link", "add", "rdtest3", "type", "rxe", "netdev", "nosuchif"); code != 1 || !strings.Contains(errs, `netdev "nosuchif" does not exist`) {
		t.Errorf("link on a missing netdev: %d %q", code, errs)
	}
	if code, _, errs := cli("link", "del", "rdtest"); code != 0 {
		t.Fatalf("link del: %d %s", code, errs)
	}
	added = false
	if code, _, errs := cli("link", "del", "rdtest"); code != 1 || !strings.Contains(errs, `no RDMA device "rdtest"`) {
		t.Errorf("second del: %d %q", code, errs)
	}
	if err := rc.DelLink("rdt0"); err != nil {
		t.Fatal(err)
	}
	vethGone = true
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := snapshot(t)
		if after == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state differs after link add + del:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLabDiagnoseExit runs `rdmainfo diagnose` on the healthy lab: exit 0,
// no FAIL.
func TestLabDiagnoseExit(t *testing.T) {
	labtest.Require(t)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"diagnose"}, &out, &errb, nil); code != 0 || strings.Contains(out.String(), "FAIL") {
		t.Errorf("diagnose: status %d\n%s%s", code, out.String(), errb.String())
	}
}

// TestLabDiagnoseSmallMTUExit sets the lab netdev's MTU to 300 (rxe still
// ACTIVE with an active MTU of 256, rdma_cm refusing the route):
// `rdmainfo diagnose` prints [FAIL] with the command that raises the MTU and
// exits 1. It restores the MTU and waits for exit 0 again.
func TestLabDiagnoseSmallMTUExit(t *testing.T) {
	labtest.OneNode(t, "changes this node's netdev MTU and looks at it locally")
	env := labtest.Require(t)
	if env.Netdev == "" {
		labtest.Missing(t, "needs the lab's netdev (RDMALAB_NETDEV)")
	}
	mtuFile := "/sys/class/net/" + env.Netdev + "/mtu"
	orig, err := os.ReadFile(mtuFile)
	if err != nil {
		t.Fatal(err)
	}
	diagnose := func() (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"diagnose"}, &out, &errb, nil)
		return code, out.String() + errb.String()
	}
	t.Cleanup(func() {
		if err := os.WriteFile(mtuFile, orig, 0o644); err != nil {
			t.Fatalf("restore the MTU of %s: %v", env.Netdev, err)
		}
		// IPv6 and its GID come back a little after the MTU.
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, out := diagnose()
			if code == 0 && !strings.Contains(out, "[warn]") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after restoring the MTU diagnose still says (status %d):\n%s", code, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	if err := os.WriteFile(mtuFile, []byte("300"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := diagnose()
	t.Logf("diagnose at MTU 300: status %d\n%s", code, out)
	if code != 1 {
		t.Errorf("status %d, want 1", code)
	}
	if !strings.Contains(out, "[FAIL] mtu/"+env.Dev+"/1") || !strings.Contains(out, "fix: ip link set "+env.Netdev+" mtu 1500") {
		t.Errorf("no [FAIL] for mtu/%s/1 with `ip link set %s mtu 1500`:\n%s", env.Dev, env.Netdev, out)
	}
}
