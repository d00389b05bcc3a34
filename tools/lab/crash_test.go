// Copyright 2026 The rdmago Authors.

package lab

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rdmago/rdmago/tools/lab/labproto"
)

func readConsole(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// watchConsole feeds console to a crashWatch in chunks of size bytes (the
// way a serial port delivers it), then ends it; it returns the crash
// onCrash got, and how many times onCrash ran.
func watchConsole(t *testing.T, console string, size int, settle time.Duration) (*Crash, int) {
	t.Helper()
	var got *Crash
	calls := 0
	w := newCrashWatch(0, func(c *Crash) { got = c; calls++ })
	w.settle = settle
	for b := []byte(console); len(b) > 0; {
		n := min(size, len(b))
		w.Write(b[:n])
		b = b[n:]
	}
	if settle < time.Second {
		time.Sleep(3 * settle)
	}
	w.finish()
	return got, calls
}

// The panic that failed CI: Debian 13's 6.12 kernel, in rdma_rxe's receive
// path, in interrupt.
func TestCrashWatchPanic(t *testing.T) {
	console := readConsole(t, "console-6.12-rxe-panic.txt")
	want := &Crash{
		Node:   0,
		Kernel: "6.12.48+deb13-amd64",
		Uptime: 29301122 * time.Microsecond,
		Module: "rdma_rxe",
		Lines: []string{
			"Oops: general protection fault, probably for non-canonical address 0x5f3b2d1c0e9a8b70: 0000 [#1] PREEMPT SMP NOPTI",
			"CPU: 0 UID: 0 PID: 0 Comm: swapper/0 Not tainted 6.12.48+deb13-amd64 #1  Debian 6.12.48-1",
			"RIP: 0010:kmem_cache_alloc_node_noprof+0xd3/0x2f0",
			"Kernel panic - not syncing: Fatal exception in interrupt",
		},
		Trace: []string{
			"__alloc_skb", "rxe_init_packet [rdma_rxe]", "send_common_ack [rdma_rxe]",
			"rxe_receiver [rdma_rxe]", "do_task [rdma_rxe]", "tasklet_action_common",
			"handle_softirqs", "__irq_exit_rcu", "sysvec_apic_timer_interrupt",
			"asm_sysvec_apic_timer_interrupt", "default_idle", "default_idle_call",
			"do_idle", "cpu_startup_entry", "rest_init", "start_kernel", "...",
		},
	}
	for _, size := range []int{1, 7, 4096} {
		for _, crlf := range []bool{false, true} {
			c := console
			if crlf { // as the serial port sends it
				c = strings.ReplaceAll(c, "\n", "\r\n")
			}
			got, calls := watchConsole(t, c, size, time.Hour)
			if calls != 1 {
				t.Fatalf("chunks of %d: onCrash ran %d times, want once", size, calls)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("chunks of %d, crlf %v: crash (-want +got):\n%s", size, crlf, diff)
			}
		}
	}
	rep := want.Report("rdmalab: ")
	for _, s := range []string{
		"rdmalab: node 0: the guest's kernel crashed in rdma_rxe, 29.3s after boot: a kernel bug, not a test failure\n",
		"rdmalab:   kernel: 6.12.48+deb13-amd64\n",
		"rdmalab:   RIP: 0010:kmem_cache_alloc_node_noprof+0xd3/0x2f0\n",
		"rdmalab:   call trace, innermost first: __alloc_skb < rxe_init_packet [rdma_rxe] < send_common_ack [rdma_rxe] < rxe_receiver [rdma_rxe] <",
		"rdmalab:   Kernel panic - not syncing: Fatal exception in interrupt\n",
	} {
		if !strings.Contains(rep, s) {
			t.Errorf("report lacks %q:\n%s", s, rep)
		}
	}
}

// A panic without an oops prints its stack after its first line; the crash
// is complete at the panic's end line, before the guest's process exits.
func TestCrashWatchPanicWithoutOops(t *testing.T) {
	var got *Crash
	w := newCrashWatch(0, func(c *Crash) { got = c })
	w.settle = time.Hour
	w.Write([]byte(readConsole(t, "console-6.1-sysrq-panic.txt")))
	want := &Crash{
		Kernel: "6.1.0-56-amd64",
		Uptime: 20100500 * time.Microsecond,
		Lines: []string{
			"Kernel panic - not syncing: sysrq triggered crash",
			"CPU: 0 PID: 321 Comm: crash.test Not tainted 6.1.0-56-amd64 #1  Debian 6.1.153-1",
		},
		Trace: []string{
			"dump_stack_lvl", "panic", "sysrq_handle_crash", "__handle_sysrq.cold", "write_sysrq_trigger",
			"proc_reg_write", "vfs_write", "ksys_write", "do_syscall_64", "entry_SYSCALL_64_after_hwframe",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("crash (-want +got):\n%s", diff)
	}
}

// An oops in process context does not panic: the guest keeps running, and
// the crash is complete once the console has been quiet for a moment.
func TestCrashWatchOopsWithoutPanic(t *testing.T) {
	var got *Crash
	done := make(chan struct{})
	w := newCrashWatch(1, func(c *Crash) { got = c; close(done) })
	w.settle = 20 * time.Millisecond
	w.Write([]byte(readConsole(t, "console-6.1-rxe-oops.txt")))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an oops without a panic was never reported")
	}
	want := &Crash{
		Node:   1,
		Kernel: "6.1.0-56-amd64",
		Uptime: 12483004 * time.Microsecond,
		Module: "rdma_rxe",
		Lines: []string{
			"BUG: kernel NULL pointer dereference, address: 0000000000000008",
			"Oops: 0000 [#1] PREEMPT SMP NOPTI",
			"CPU: 1 PID: 412 Comm: uverbs.test Tainted: G        W          6.1.0-56-amd64 #1  Debian 6.1.153-1",
			"RIP: 0010:rxe_completer+0x1a2/0x9c0 [rdma_rxe]",
		},
		Trace: []string{
			"rxe_do_task [rdma_rxe]", "rxe_post_send [rdma_rxe]", "ib_uverbs_post_send [ib_uverbs]",
			"ib_uverbs_write [ib_uverbs]", "vfs_write", "ksys_write", "do_syscall_64",
			"entry_SYSCALL_64_after_hwframe",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("crash (-want +got):\n%s", diff)
	}
	if w.finish() != got {
		t.Error("finish does not return the crash already reported")
	}
}

// Soft lockups, WARNINGs, hung tasks and init's own lines are not crashes.
func TestCrashWatchNotACrash(t *testing.T) {
	if got, calls := watchConsole(t, readConsole(t, "console-not-a-crash.txt"), 13, 10*time.Millisecond); got != nil || calls != 0 {
		t.Fatalf("a console without a crash gave %d crash(es): %+v", calls, got)
	}
}

// Console text is the guest's: the report escapes what is not printable.
func TestCrashReportEscapes(t *testing.T) {
	console := "[    1.000000] Kernel panic - not syncing: \x1b[2Jgone\x07 \xff\n"
	got, _ := watchConsole(t, console, 4096, time.Hour)
	if got == nil {
		t.Fatal("panic not seen")
	}
	rep := got.Report("")
	if strings.ContainsAny(rep, "\x1b\x07") || !strings.Contains(rep, `Kernel panic - not syncing: \x1b[2Jgone\a \xff`) {
		t.Fatalf("report not escaped: %q", rep)
	}
	if got.Module != "" || got.Where() != "in the core kernel" {
		t.Errorf("module %q, where %q", got.Module, got.Where())
	}
}

// fakeQEMUEnv makes the test binary play a node's QEMU (see TestMain):
// the value is the file of console text it prints, after a pause that lets
// every node start, before it sleeps a minute, or exits when the value
// ends in "+exit" (as QEMU does when its guest panics with panic=-1 and
// -no-reboot). The test binary, not a shell: inside the lab there is none.
const fakeQEMUEnv = "RDMALAB_FAKE_QEMU"

func TestMain(m *testing.M) {
	if v := os.Getenv(fakeQEMUEnv); v != "" {
		name, exit := strings.CutSuffix(v, "+exit")
		time.Sleep(300 * time.Millisecond)
		b, err := os.ReadFile(name)
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(2)
		}
		os.Stdout.Write(b)
		if !exit {
			time.Sleep(time.Minute)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeNodes starts a lab of fake nodes (fakeQEMUEnv), node i printing
// console i (empty: none) and exiting when exit[i]. A node's control
// channel ends when its process does.
func fakeNodes(t *testing.T, consoles []string, exit []bool) *Lab {
	t.Helper()
	l := &Lab{opts: Options{Nodes: len(consoles), Timeout: time.Minute}, done: make(chan struct{})}
	dir := t.TempDir()
	for i, c := range consoles {
		f := filepath.Join(dir, "console"+string(rune('0'+i)))
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if exit[i] {
			f += "+exit"
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fakeQEMUEnv+"="+f)
		nd, err := l.spawn(i, cmd)
		if err != nil {
			t.Fatal(err)
		}
		nd.w = labproto.NewWriter(io.Discard)
		go func() { <-nd.exited; close(nd.frames) }()
	}
	t.Cleanup(func() { l.kill() })
	return l
}

// A node whose kernel panics stops the lab at once: the other node's step
// ends within seconds, not at its test's timeout, and both nodes' errors
// are the crash.
func TestLabStopsOnCrash(t *testing.T) {
	panicked := readConsole(t, "console-6.12-rxe-panic.txt")
	oopsed := readConsole(t, "console-6.1-rxe-oops.txt")
	for _, tc := range []struct {
		name     string
		consoles []string
		exit     []bool
		node     int
		line     string
	}{
		{"panic on node 0", []string{panicked, ""}, []bool{true, false}, 0, "Kernel panic - not syncing: Fatal exception in interrupt"},
		{"oops on node 1, no panic", []string{"", oopsed}, []bool{false, false}, 1, "Oops: 0000 [#1] PREEMPT SMP NOPTI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := fakeNodes(t, tc.consoles, tc.exit)
			outs := []Output{{io.Discard, io.Discard}, {io.Discard, io.Discard}}
			begin := time.Now()
			_, err := l.Run(make([]labproto.StepMsg, 2), outs)
			if took := time.Since(begin); took > 30*time.Second {
				t.Errorf("the step ended after %v: the lab waited for the crashed node's peer", took)
			}
			var c *Crash
			if !errors.As(err, &c) {
				t.Fatalf("step error %v is not a crash", err)
			}
			if c.Node != tc.node || c.Module != "rdma_rxe" || !slices.Contains(c.Lines, tc.line) {
				t.Errorf("crash %+v, want node %d in rdma_rxe with %q", c, tc.node, tc.line)
			}
			if want := "stopped because node " + string(rune('0'+tc.node)) + "'s kernel crashed"; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			for _, nd := range l.nodes {
				select {
				case <-nd.exited:
				case <-time.After(10 * time.Second):
					t.Errorf("node %d still runs after the crash", nd.idx)
				}
			}
			if l.Crash() != c {
				t.Error("Lab.Crash is not the crash the step returned")
			}
		})
	}
}
