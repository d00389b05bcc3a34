//go:build rdmalab

// Copyright 2026 The rdmago Authors.

package rsocket_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/rdmago/rdmago/rsocket"
)

// labAddr is this host's address on its RDMA device: in the lab,
// RDMALAB_ADDR; anywhere else, an address of a netdev with an RDMA link
// (rdma link show).
func labAddr() string { return os.Getenv("RDMALAB_ADDR") }

// net/http both ways over RDMA: a server on rsocket.Listen, a client
// whose Transport dials with rsocket.Dialer.DialContext.
func Example_http() {
	ctx := context.Background()
	l, err := rsocket.Listen(ctx, "tcp", net.JoinHostPort(labAddr(), "0")) // port 0: any free one
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello over rsockets, %s", r.Proto)
	})}
	go srv.Serve(l)
	defer srv.Close() // closes l too

	tr := &http.Transport{DialContext: (&rsocket.Dialer{}).DialContext}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	resp, err := client.Get("http://" + l.Addr().String() + "/")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Status)
	fmt.Println(string(body))
	// Output:
	// 200 OK
	// hello over rsockets, HTTP/1.1
}

// An echo over RDMA with io.Copy: the server copies the connection to
// itself until the client's CloseWrite, then closes; the client reads
// everything back until io.EOF.
func Example_echo() {
	ctx := context.Background()
	l, err := rsocket.Listen(ctx, "tcp", net.JoinHostPort(labAddr(), "0"))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()

	c, err := rsocket.Dial(ctx, "tcp", l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "hello"); err != nil {
		log.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		log.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("received: %s\n", got)
	// Output: received: hello
}
