package transfer_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// Send a directory from Go code. A Receiver serves a Listener (here
// transfertest's in-memory one; over RDMA, transfer/rdma.Listen), a Sender
// plans the paths and sends them over a Transport (here the Listener's
// Dial; over RDMA, transfer/rdma.Dial). Each file arrives verified, synced
// and renamed into place.
func Example() {
	src, _ := os.MkdirTemp("", "src")
	dst, _ := os.MkdirTemp("", "dst")
	defer os.RemoveAll(src)
	defer os.RemoveAll(dst)
	os.MkdirAll(filepath.Join(src, "photos", "2026"), 0o755)
	os.WriteFile(filepath.Join(src, "photos", "2026", "beach.jpg"), bytes.Repeat([]byte{0xff}, 3<<20), 0o644)
	os.WriteFile(filepath.Join(src, "photos", "notes.txt"), []byte("hello\n"), 0o644)

	ctx := context.Background()
	ln := transfertest.NewListener()
	r := &transfer.Receiver{Dir: dst}
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, ln, nil) }()

	t, err := ln.Dial(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	items, _, err := transfer.Plan(filepath.Join(src, "photos"))
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
	fmt.Printf("sent %d items, all verified: %v\n", len(items), rep.OK(len(items)))

	filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dst {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		if d.IsDir() {
			fmt.Printf("%s/\n", filepath.ToSlash(rel))
			return nil
		}
		fi, _ := d.Info()
		fmt.Printf("%s %d bytes\n", filepath.ToSlash(rel), fi.Size())
		return nil
	})
	// Output:
	// sent 4 items, all verified: true
	// photos/
	// photos/2026/
	// photos/2026/beach.jpg 3145728 bytes
	// photos/notes.txt 6 bytes
}
