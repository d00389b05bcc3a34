// Copyright 2026 The rdmago Authors.

//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
			sender = sendsBeforeTeardown(t, mckey)
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

// sendsBeforeTeardown returns the command line of mckey (the cTool line
// mckey) as a sender whose datagrams all leave.
//
// mckey -s posts its sends unsignaled and at once destroys its address
// handle. Linux 6.1's rxe sends a user QP's work requests within the
// post's system call; 6.12's queues them to a work queue, whose worker
// often runs only after that, on another CPU, and fails the rest with
// "rxe_get_av: Unable to find AH matching ah_num" (mckey to mckey loses
// them the same way). So in the lab mckey runs at SCHED_IDLE (util-linux's
// chrt) with every CPU but CPU 0 taken offline for the rest of t: every
// kernel thread that sends its datagrams (the work queue's workers, and
// kthreadd making more of them) then runs before mckey's next instruction.
// (Confining the work queues and mckey to one CPU of several was not
// enough: a worker waiting for kthreadd on another CPU left mckey the CPU.)
func sendsBeforeTeardown(t *testing.T, mckey []string) []string {
	t.Helper()
	if !labtest.InLab() {
		return mckey
	}
	onlines, err := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/online")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range onlines {
		cpu := filepath.Base(filepath.Dir(f))
		if b, err := os.ReadFile(f); err != nil || cpu == "cpu0" || strings.TrimSpace(string(b)) != "1" {
			continue
		}
		if err := os.WriteFile(f, []byte("0"), 0); err != nil {
			t.Fatalf("take %s offline: %v", cpu, err)
		}
		t.Cleanup(func() {
			if err := os.WriteFile(f, []byte("1"), 0); err != nil {
				t.Errorf("bring %s back online: %v", cpu, err)
			}
		})
	}
	return wrap(cTool(t, "chrt"), []string{"--idle", "0"}, mckey)
}
