package transfertest_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// Test code that uses package transfer without RDMA: a Pipe's two ends
// are a Transport each, one served by a Receiver, the other sent over.
// Faults corrupt what one end writes; the receiver finds the chunk's CRC32C
// wrong, asks for it again, and the file still arrives verified.
func ExamplePipe() {
	src, _ := os.MkdirTemp("", "src")
	dst, _ := os.MkdirTemp("", "dst")
	defer os.RemoveAll(src)
	defer os.RemoveAll(dst)
	os.WriteFile(filepath.Join(src, "f"), []byte("hello, receiver"), 0o644)

	corruptFirst := &transfertest.Options{Faults: transfertest.Faults{
		Write: func(i int, data []byte) transfertest.Fault {
			if i == 0 {
				data[0] ^= 0xff // flip the first byte of the first write
			}
			return transfertest.Deliver
		},
	}}
	s, r := transfertest.Pipe(corruptFirst, nil)
	defer s.Close()
	defer r.Close()

	ctx := context.Background()
	served := make(chan error, 1)
	go func() {
		_, err := (&transfer.Receiver{Dir: dst}).ServeConn(ctx, r)
		served <- err
	}()
	items, _, err := transfer.Plan(filepath.Join(src, "f"))
	if err != nil {
		log.Fatal(err)
	}
	rep, err := (&transfer.Sender{}).Send(ctx, s, items)
	if err != nil {
		log.Fatal(err)
	}
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	f := rep.Files[0]
	b, _ := os.ReadFile(filepath.Join(dst, "f"))
	fmt.Printf("%s: verified %v, chunks sent again %d: %q\n", f.Name, f.Verified, rep.Resent, b)
	// Output:
	// f: verified true, chunks sent again 1: "hello, receiver"
}
