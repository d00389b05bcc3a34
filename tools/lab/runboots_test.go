// Copyright 2026 The rdmago Authors.

package lab

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rdmago/rdmago/tools/lab/labproto"
)

// fakeLab is a booted lab whose packages pass, fail or crash the guest's
// kernel as plan says for each boot (numbered from 1).
type fakeLab struct {
	t     *testing.T
	boot  int
	plan  func(boot int, pkg string) string // "ok", "fail", "crash", "lost"
	ran   *[]string                         // "boot/pkg", in order
	nodes int
}

func (f *fakeLab) Nodes() int          { return f.nodes }
func (f *fakeLab) GuestKernel() string { return "6.12.48+deb13-amd64" }
func (f *fakeLab) Close() error        { return nil }

func (f *fakeLab) Run(steps []labproto.StepMsg, outs []Output) ([]Result, error) {
	pkg := strings.TrimSuffix(path.Base(steps[0].Args[0]), ".test")
	*f.ran = append(*f.ran, fmt.Sprintf("%d/%s", f.boot, pkg))
	res := make([]Result, f.nodes)
	switch f.plan(f.boot, pkg) {
	case "fail":
		fmt.Fprintf(outs[0].Stdout, "--- FAIL: TestX\n")
		res[0].Status = 1
	case "crash":
		// What the real lab returns: node 0's console said so.
		var crash *Crash
		w := newCrashWatch(0, func(c *Crash) { crash = c })
		w.Write([]byte(readConsole(f.t, "console-6.12-rxe-panic.txt")))
		if crash == nil {
			f.t.Fatal("the fake console did not crash")
		}
		return res, errors.Join(crash, fmt.Errorf("node 1: stopped because node 0's kernel crashed: %w", crash))
	case "lost":
		return res, errors.New("node 1: guest stopped talking")
	}
	return res, nil
}

// runFake runs packages a..f (c has no tests, e's build failed) through
// runBoots in fake labs that follow plan; bootErr, when set, is what boot
// n returns instead of a lab.
func runFake(t *testing.T, plan func(boot int, pkg string) string, bootErr func(n int) error) (bool, string, []string, error) {
	t.Helper()
	pkgs := []testPkg{
		{ImportPath: "x/a", HasTests: true, Bin: "/b/a.test"},
		{ImportPath: "x/b", HasTests: true, Bin: "/b/b.test"},
		{ImportPath: "x/c"},
		{ImportPath: "x/d", HasTests: true, Bin: "/b/d.test"},
		{ImportPath: "x/e", HasTests: true}, // build failed
		{ImportPath: "x/f", HasTests: true, Bin: "/b/f.test"},
	}
	var out bytes.Buffer
	var ran []string
	boots := 0
	boot := func() (testLab, time.Time, error) {
		boots++
		if bootErr != nil {
			if err := bootErr(boots); err != nil {
				return nil, time.Now(), err
			}
		}
		return &fakeLab{t: t, boot: boots, plan: plan, ran: &ran, nodes: 2}, time.Now(), nil
	}
	ok, err := runBoots(TestOptions{Options: Options{Kernel: "6.12", Nodes: 2}}, pkgs, boot, &out)
	return ok, out.String(), ran, err
}

// summary keeps go test's lines and rdmalab's loud ones.
func summary(out string) []string {
	var s []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "?") || strings.Contains(l, "***") {
			f := strings.Fields(l)
			if strings.HasPrefix(l, "ok ") || (strings.HasPrefix(l, "FAIL\t") && len(f) == 3 && strings.HasSuffix(f[2], "s")) {
				l = f[0] + " " + f[1] // drop the duration
			}
			s = append(s, l)
		}
	}
	return s
}

// A crash reruns, in a fresh boot, the package that was running and those
// not yet run; a package that failed by itself is not run again.
func TestRunBootsRerunsAfterCrash(t *testing.T) {
	plan := func(boot int, pkg string) string {
		switch {
		case pkg == "b":
			return "fail"
		case pkg == "d" && boot == 1:
			return "crash"
		}
		return "ok"
	}
	ok, out, ran, err := runFake(t, plan, nil)
	if err != nil || ok {
		t.Errorf("runBoots = %v, %v; want false (x/b failed), nil", ok, err)
	}
	if diff := cmp.Diff([]string{"1/a", "1/b", "1/d", "2/d", "2/f"}, ran); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	want := []string{
		"ok x/a",
		"FAIL x/b",
		"?   \tx/c\t[no test files]",
		"rdmalab: *** guest kernel crashed in rdma_rxe during x/d; rerunning 2 packages in a fresh boot (kernel 6.12.48+deb13-amd64, 2 node(s)) ***",
		"ok x/d",
		"ok x/f",
	}
	if diff := cmp.Diff(want, summary(out)); diff != "" {
		t.Errorf("summary (-want +got):\n%s\n%s", diff, out)
	}
	for _, s := range []string{
		"rdmalab: node 0: the guest's kernel crashed in rdma_rxe, 29.3s after boot: a kernel bug, not a test failure\n",
		"rdmalab:   RIP: 0010:kmem_cache_alloc_node_noprof+0xd3/0x2f0\n",
		"rdmalab:   call trace, innermost first: __alloc_skb < rxe_init_packet [rdma_rxe] < send_common_ack [rdma_rxe] < rxe_receiver [rdma_rxe]",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}

	// Without x/b's own failure the run passes after the rerun.
	ok, out, _, err = runFake(t, func(boot int, pkg string) string {
		if pkg == "b" {
			return "ok"
		}
		return plan(boot, pkg)
	}, nil)
	if !ok || err != nil {
		t.Errorf("a crash whose rerun passed: runBoots = %v, %v\n%s", ok, err, out)
	}
}

// A second crash is not retried: the run fails, saying so.
func TestRunBootsCrashTwice(t *testing.T) {
	ok, out, ran, err := runFake(t, func(boot int, pkg string) string {
		if pkg == "d" {
			return "crash"
		}
		return "ok"
	}, nil)
	if ok || err != nil {
		t.Errorf("runBoots = %v, %v; want false, nil", ok, err)
	}
	if diff := cmp.Diff([]string{"1/a", "1/b", "1/d", "2/d"}, ran); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	want := []string{
		"ok x/a",
		"ok x/b",
		"?   \tx/c\t[no test files]",
		"rdmalab: *** guest kernel crashed in rdma_rxe during x/d; rerunning 2 packages in a fresh boot (kernel 6.12.48+deb13-amd64, 2 node(s)) ***",
		"rdmalab: *** guest kernel crashed again, in rdma_rxe during x/d, in the fresh boot: not retried ***",
		"FAIL\tx/d [guest kernel crashed]",
		"FAIL\tx/f [not run: the guest kernel crashed]",
	}
	if diff := cmp.Diff(want, summary(out)); diff != "" {
		t.Errorf("summary (-want +got):\n%s\n%s", diff, out)
	}
}

// A crash while the lab boots reruns everything; a lab failure that is not
// a crash is not retried.
func TestRunBootsOtherFailures(t *testing.T) {
	var crash *Crash
	w := newCrashWatch(1, func(c *Crash) { crash = c })
	w.Write([]byte(readConsole(t, "console-6.12-rxe-panic.txt")))
	ok, out, ran, err := runFake(t, func(int, string) string { return "ok" }, func(n int) error {
		if n == 1 {
			return fmt.Errorf("boot: %w", crash)
		}
		return nil
	})
	if !ok || err != nil {
		t.Errorf("crash at boot: runBoots = %v, %v\n%s", ok, err, out)
	}
	if diff := cmp.Diff([]string{"2/a", "2/b", "2/d", "2/f"}, ran); diff != "" {
		t.Errorf("crash at boot: runs (-want +got):\n%s", diff)
	}
	if !strings.Contains(out, "guest kernel crashed in rdma_rxe while the lab booted; rerunning 4 packages in a fresh boot") {
		t.Errorf("crash at boot not announced:\n%s", out)
	}

	ok, out, ran, err = runFake(t, func(_ int, pkg string) string {
		if pkg == "b" {
			return "lost"
		}
		return "ok"
	}, nil)
	if ok || err != nil {
		t.Errorf("lost guest: runBoots = %v, %v", ok, err)
	}
	if diff := cmp.Diff([]string{"1/a", "1/b"}, ran); diff != "" {
		t.Errorf("lost guest: runs (-want +got):\n%s", diff)
	}
	want := []string{"ok x/a", "FAIL x/b", "?   \tx/c\t[no test files]", "FAIL\tx/d [lab failed]", "FAIL\tx/f [lab failed]"}
	if diff := cmp.Diff(want, summary(out)); diff != "" {
		t.Errorf("lost guest: summary (-want +got):\n%s\n%s", diff, out)
	}

	if _, _, _, err := runFake(t, nil, func(int) error { return errors.New("no qemu") }); err == nil {
		t.Error("a lab that does not boot is not an error")
	}
}
