// Copyright 2026 The rdmago Authors.

//go:build linux

package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// TestInteropMckey: rdmaping --mcast against librdmacm's mckey, as receiver
// and as sender (with two nodes, node 0 receives and node 1 sends over the
// wire), and rdmaping to rdmaping with every byte checked.
//
// A datagram sent before the receiver's QP is attached to the group is
// lost, so each sender starts only once its receiver says it is ready:
// rdmaping once it has posted its receives and attached its QP ("receiving
// data transfers"), mckey once it has joined ("mckey: joined", printed
// after librdmacm attached the QP; it posted its receives before joining).
// rdmaping's sender then needs no --settle pause (mckey's own is fixed).
//
//	go run ./cmd/rdmalab test [--nodes 2] -run Mckey -v ./cmd/rdmaping/
func TestInteropMckey(t *testing.T) {
	r := labRole(t)
	mckey := cTool(t, "mckey")
	done := []string{"mckey: joined dgid: ::ffff:239.", "data transfers complete", "test complete"}
	const goReady = "receiving data transfers"
	t.Run("GoReceiver_CSender", func(t *testing.T) {
		var sender []string
		if r.client {
			sender = sendsBeforeTeardown(t, r.bind, mckey)
		}
		pairWith(t, r, pairOpts{ready: goReady},
			[]string{"-s", "--mcast", "239.3.3.1", "-a", r.bind, "-C", "5", "-S", "200", "--timeout", "60s", "-v"}, true,
			append(done, "mcast: 5 datagrams of 200 bytes from mckey, immediate checked"),
			append(sender, "-s", "-m", "239.3.3.1", "-b", r.bind, "-C", "5", "-S", "200"), false, append(done, "return status 0"))
	})
	t.Run("CReceiver_GoSender", func(t *testing.T) {
		pairWith(t, r, pairOpts{ready: "mckey: joined dgid"},
			append(lineBuffered(t, mckey), "-m", "239.3.3.2", "-b", r.bind, "-C", "5", "-S", "200"), false, append(done, "return status 0"),
			[]string{"-c", "--mcast", "239.3.3.2", "-a", r.bind, "-C", "5", "-S", "200", "--settle", "0s", "--timeout", "60s", "-v"}, true, done)
	})
	t.Run("GoReceiver_GoSender", func(t *testing.T) {
		pairWith(t, r, pairOpts{ready: goReady},
			[]string{"-s", "--mcast", "239.3.3.3", "-a", r.bind, "-C", "5", "-S", "200", "--timeout", "60s"}, true,
			append(done, "mcast: 5 datagrams of 200 bytes from rdmaping, every byte checked"),
			[]string{"-c", "--mcast", "239.3.3.3", "-a", r.bind, "-C", "5", "-S", "200", "--settle", "0s", "--timeout", "60s"}, true, done)
	})
}

// wqCPUMask is the CPUs the kernel's unbound work queues run on.
const wqCPUMask = "/sys/devices/virtual/workqueue/cpumask"

// sendsBeforeTeardown returns the command line of mckey (the cTool line
// mckey) as a sender on addr whose datagrams all leave.
//
// mckey -s posts its sends unsignaled and at once destroys its address
// handle. Linux 6.1's rxe sends a user QP's work requests within the
// post's system call; 6.12's queues them to a work queue, whose worker
// often runs only after that, on another CPU, and fails the rest with
// "rxe_get_av: Unable to find AH matching ah_num" (mckey to mckey loses
// them the same way). So in the lab mckey runs on CPU 0 at SCHED_IDLE
// (util-linux's taskset and chrt) while the unbound work queues, rxe's
// among them, are confined to CPU 0 for the rest of t: each send's work
// then preempts mckey as soon as it is posted. The workers made for the
// new CPUs start as one, which before its first work item makes a spare
// and sleeps until it runs, and mckey would run on meanwhile: so one
// datagram from rdmaping goes through rxe's work queue first.
func sendsBeforeTeardown(t *testing.T, addr string, mckey []string) []string {
	t.Helper()
	if !labtest.InLab() {
		return mckey
	}
	old, err := os.ReadFile(wqCPUMask)
	if err != nil {
		t.Fatalf("read the work queues' CPUs: %v", err)
	}
	if err := os.WriteFile(wqCPUMask, []byte("1\n"), 0); err != nil {
		t.Fatalf("confine the work queues to CPU 0: %v", err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(wqCPUMask, old, 0); err != nil {
			t.Errorf("give the work queues back CPUs %s: %v", strings.TrimSpace(string(old)), err)
		}
	})
	warm := []string{"-c", "--mcast", "239.3.3.9", "-a", addr, "-C", "1", "--settle", "0s", "--timeout", "30s"}
	if out, err := runClient(labtest.Context(t, 40*time.Second), t, warm, true); err != nil {
		t.Fatalf("rdmaping %q, to give the work queue its workers: %v\n%s", warm, err, out)
	}
	return wrap(cTool(t, "taskset"), []string{"-c", "0"}, wrap(cTool(t, "chrt"), []string{"--idle", "0"}, mckey))
}
