// Package labtest marks tests that need a real RDMA kernel.
//
// Such tests run for real inside the Soft-RoCE lab (`rdmalab test PKG`), which sets
// RDMALAB_NODE, RDMALAB_ADDR, RDMALAB_PEER and RDMALAB_DEV in the guest. On a host
// without RDMA they are skipped with the reason; inside the lab a missing device is
// a failure, never a skip.
package labtest

import (
	"os"
	"path/filepath"
	"testing"
)

// InLab reports whether the process runs inside an rdmalab guest.
func InLab() bool { return os.Getenv("RDMALAB_NODE") != "" }

// Env is what the lab tells a guest about itself.
type Env struct {
	Node string // "0" or "1"
	Addr string // this node's IPv4 address
	Peer string // the other node's address (its own with one node)
	Dev  string // this node's rxe device, e.g. "rxe0"
	// Netdev is the network device under Dev, e.g. "v0" (RDMALAB_NETDEV);
	// "" outside the lab.
	Netdev string
	// TwoNodes is set when the lab runs two guests (RDMALAB_NODES=2):
	// node 0 then plays the server and node 1 the client. With one node
	// both roles run in one process (rxe loops back to its own address).
	TwoNodes bool
}

// Server reports whether this node plays the server with two nodes.
func (e Env) Server() bool { return e.Node == "0" }

// Require skips t on a host without RDMA, saying how to run it for real, and
// fails t inside the lab when no uverbs device is present. It returns the lab
// environment (Dev falls back to the first device when RDMALAB_DEV is unset).
func Require(t testing.TB) Env {
	t.Helper()
	devs, _ := filepath.Glob("/dev/infiniband/uverbs*")
	if !InLab() {
		if len(devs) == 0 {
			t.Skip("needs an RDMA device (none in /dev/infiniband): run it in the lab with `go run ./cmd/rdmalab test ./PKG`")
		}
	} else if len(devs) == 0 {
		t.Fatal("inside the lab but no /dev/infiniband/uverbs* device: the guest's rxe setup failed")
	}
	e := Env{
		Node:   os.Getenv("RDMALAB_NODE"),
		Addr:   os.Getenv("RDMALAB_ADDR"),
		Peer:   os.Getenv("RDMALAB_PEER"),
		Dev:    os.Getenv("RDMALAB_DEV"),
		Netdev: os.Getenv("RDMALAB_NETDEV"),

		TwoNodes: os.Getenv("RDMALAB_NODES") == "2",
	}
	if e.Peer == "" {
		e.Peer = e.Addr
	}
	return e
}

// Missing is for a test that cannot run because something it needs is
// absent (a C tool, a lab variable): outside the lab it skips t with the
// reason; inside the lab, which installs and sets all of it, it fails t.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InLab() {
		t.Fatalf("inside the lab: "+format, args...)
	}
	t.Skipf(format, args...)
}

// OneNode skips t in a two-node lab, saying why it runs with one node only:
// for a test that gains nothing from a second node (both its ends in this
// process, rxe looping back; or nothing on the wire at all), which the
// one-node lab of the same kernel runs anyway. On both nodes of a two-node
// lab it would only run twice at once, each node on half the CPUs. why says
// what the test does, e.g. "both ends in this process".
func OneNode(t testing.TB, why string) {
	t.Helper()
	if InLab() && os.Getenv("RDMALAB_NODES") == "2" {
		t.Skipf("runs in the one-node lab only (%s): a second node adds nothing to it", why)
	}
}
