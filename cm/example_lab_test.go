//go:build rdmalab

// Copyright 2026 The rdmago Authors.

package cm_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/uverbs"
)

// A server accepts a connection and sends, in the accept's private data,
// the RemoteBuffer of memory the client may write; the client RDMA WRITEs
// "hello" into it with an immediate, whose receive completion tells the
// server the data is there. Both ends run in one process over the device's
// own address, RDMALAB_ADDR.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := net.JoinHostPort(os.Getenv("RDMALAB_ADDR"), "18471")

	// The server: register a buffer peers may write, post a receive for
	// the write's immediate, and advertise the buffer with the accept.
	buf := make([]byte, 64)
	var mr *uverbs.MR
	srvOpts := &cm.Options{
		Setup: func(c *cm.Conn) (err error) {
			if mr, err = c.PD().RegMR(buf, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite); err != nil {
				return err
			}
			return c.QP().PostRecv(uverbs.RecvWR{ID: 1})
		},
		PrivateDataFunc: func(*cm.Conn) ([]byte, error) { return mr.Descriptor().MarshalBinary() },
	}
	l, err := cm.Listen(ctx, addr, srvOpts)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		srv, err := l.Accept(ctx)
		if err != nil {
			done <- err
			return
		}
		defer srv.Close()
		defer mr.Close() // before the Conn, whose Close frees the PD (defers run last first)
		wcs := make([]uverbs.WC, 1)
		if _, _, err := srv.Wait(ctx, wcs); err != nil {
			done <- err
			return
		}
		if wcs[0].Status != uverbs.WCSuccess {
			done <- fmt.Errorf("receive: %v", wcs[0].Status)
			return
		}
		// ByteLen of a WRITE WITH IMM's receive is the write's length.
		fmt.Printf("received: %s\n", buf[:wcs[0].ByteLen])
		done <- nil
	}()

	// The client: decode the server's buffer from the accept and write it.
	c, err := cm.Dial(ctx, addr, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var remote uverbs.RemoteBuffer
	if err := remote.UnmarshalBinary(c.Peer().PrivateData[:uverbs.RemoteBufferSize]); err != nil {
		log.Fatal(err)
	}
	msg := []byte("hello")
	local, err := c.PD().RegMR(msg, uverbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer local.Close()
	if err := c.QP().PostSend(uverbs.SendWR{ID: 2, Opcode: uverbs.WRRDMAWriteWithImm, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{local.SGE(0, len(msg))}, RemoteAddr: remote.Addr, RKey: remote.RKey}); err != nil {
		log.Fatal(err)
	}
	wcs := make([]uverbs.WC, 1)
	if _, _, err := c.Wait(ctx, wcs); err != nil || wcs[0].Status != uverbs.WCSuccess {
		log.Fatal(err, wcs[0].Status)
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output: received: hello
}
