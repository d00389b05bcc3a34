// Package labtest marks tests that need a real RDMA kernel.
//
// Such tests run for real inside the Soft-RoCE lab (`rdmalab test PKG`), which sets
// RDMALAB_NODE, RDMALAB_ADDR, RDMALAB_PEER and RDMALAB_DEV in the guest. On a host
// without RDMA they are skipped with the reason; inside the lab a missing device is
// a failure, never a skip.
package labtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
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
	// TwoNodes is set when the lab runs two nodes (RDMALAB_NODES=2).
	TwoNodes bool
}

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

// RunRoles runs a test's two sides: with one node both here, serve in a
// goroutine, client in this one; with two, node "0" runs serve and node
// "1" client. An error of either fails t.
func (e Env) RunRoles(t testing.TB, serve, client func() error) {
	t.Helper()
	if e.TwoNodes {
		f := client
		if e.Node == "0" {
			f = serve
		}
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return
	}
	errs := make(chan error, 1)
	go func() {
		err := errors.New("the serving side stopped without returning (a FailNow in its goroutine?)")
		defer func() { errs <- err }()
		err = serve()
	}()
	if err := client(); err != nil {
		t.Error(err)
	}
	if err := <-errs; err != nil {
		t.Error(err)
	}
}

// Retry calls dial, 100 ms apart, until it succeeds or fails with an error
// again does not match, and gives up with dial's last error once ctx ends:
// a dial while the other side may not listen yet (again matches the CM's
// no-listener error).
func Retry[T any](ctx context.Context, again func(error) bool, dial func() (T, error)) (T, error) {
	for {
		c, err := dial()
		if err == nil || !again(err) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return c, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
