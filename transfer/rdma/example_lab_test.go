//go:build rdmalab

package rdma_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/rdma"
)

// Send a file over RDMA: a Receiver serves what rdma.Listen accepts, a
// Sender sends over what rdma.Dial connects. Both ends here are one
// process on the lab's RDMA address (rxe loops back to itself); on two
// hosts the receiver listens on its address and the sender dials it.
// WaitForListener makes Dial wait for a receiver that is still starting.
func Example() {
	host := os.Getenv("RDMALAB_ADDR") // an IP address on an RDMA device (rdma link show)
	addr := net.JoinHostPort(host, "18777")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	src, _ := os.MkdirTemp("", "src")
	dst, _ := os.MkdirTemp("", "dst")
	defer os.RemoveAll(src)
	defer os.RemoveAll(dst)
	os.WriteFile(filepath.Join(src, "hello.txt"), []byte("hello over RDMA\n"), 0o644)

	ln, err := rdma.Listen(ctx, addr, nil)
	if err != nil {
		log.Fatal(err)
	}
	// A small window: registered memory counts against RLIMIT_MEMLOCK
	// (ulimit -l), at both ends.
	r := &transfer.Receiver{Dir: dst, Slots: 4, SlotSize: 64 << 10}
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, ln, nil) }()

	t, err := rdma.Dial(ctx, addr, &rdma.Options{WaitForListener: true})
	if err != nil {
		log.Fatal(err)
	}
	items, _, err := transfer.Plan(filepath.Join(src, "hello.txt"))
	if err != nil {
		log.Fatal(err)
	}
	rep, err := (&transfer.Sender{}).Send(ctx, t, items)
	t.Close()
	ln.Close()
	<-served
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range rep.Files {
		if f.Verified {
			fmt.Println(f.Name, "verified")
		}
	}
	b, _ := os.ReadFile(filepath.Join(dst, "hello.txt"))
	fmt.Printf("received: %s", b)
	// Output:
	// hello.txt verified
	// received: hello over RDMA
}
