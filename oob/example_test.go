// Copyright 2026 The rdmago Authors.

package oob_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/netip"
	"time"

	"github.com/rdmago/rdmago/oob"
	"github.com/rdmago/rdmago/uverbs"
)

// The example programs' message: what ibv_rc_pingpong prints and sends
// for its QP (LID, QPN, PSN and GID in hex), and back.
func ExampleMarshal() {
	d := uverbs.Dest{QPN: 0x11, PSN: 0xabcdef, GID: netip.MustParseAddr("::ffff:192.168.7.2").As16()}
	msg := oob.Marshal(d)
	fmt.Printf("%d bytes: %s\n", len(msg), msg[:len(msg)-1])
	back, err := oob.Parse(msg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back == d, back.GID.Addr())
	// Output:
	// 52 bytes: 0000:000011:abcdef:00000000000000000000ffffc0a80702
	// true 192.168.7.2
}

// Both sides of the exchange in one program, over loopback TCP (no RDMA
// device is needed for it). A real server would create its QP first,
// publish it as local, and move it to RTS in connect with
// uverbs.QP.Connect; the client connects its QP after Client returns.
func ExampleServer() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0") // ibv_rc_pingpong's port is oob.PingpongPort
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()

	server := uverbs.Dest{QPN: 0x100, PSN: 0x1234}
	client := uverbs.Dest{QPN: 0x200, PSN: 0x5678}
	done := make(chan error, 1)
	go func() {
		_, err := oob.Server(ctx, ln, server, func(remote uverbs.Dest) error {
			fmt.Printf("server: connect to QPN %#x, PSN %#x\n", remote.QPN, remote.PSN)
			return nil
		}, nil)
		done <- err
	}()
	remote, err := oob.Client(ctx, ln.Addr().String(), client, &oob.Options{StepTimeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	fmt.Printf("client: connect to QPN %#x, PSN %#x\n", remote.QPN, remote.PSN)
	// Output:
	// server: connect to QPN 0x200, PSN 0x5678
	// client: connect to QPN 0x100, PSN 0x1234
}
