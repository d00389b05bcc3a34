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
	"time"

	"github.com/rdmago/rdmago/rsocket"
)

// An HTTP server on an rsocket listener: the Listener is a net.Listener,
// so http.Serve (and any server written against package net) runs over
// RDMA unchanged. Clients are Go programs using rsocket.Dialer, C
// programs using rsockets, or unmodified ones (curl) under
// LD_PRELOAD=librspreload.so.
func ExampleListen() {
	ctx := context.Background()
	// The host's address on the RDMA device (an empty host: every device).
	l, err := rsocket.Listen(ctx, "tcp", "10.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello over RDMA")
	})
	log.Fatal(http.Serve(l, nil))
}

// An HTTP client whose connections are rsockets: Dialer.DialContext has
// net.Dialer's signature, so it plugs into http.Transport.
func ExampleDialer_DialContext() {
	d := &rsocket.Dialer{WaitForListener: true, Timeout: 10 * time.Second}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	resp, err := client.Get("http://10.0.0.1:8080/")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(os.Stdout, resp.Body)
}

// A client that may start before its server: WaitForListener dials again
// while nothing listens on the port, until the context or Timeout ends.
// The settings of the rsocket itself (what a C program sets with
// rsetsockopt) are Options; zero fields are librdmacm's defaults.
func ExampleDialer() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := &rsocket.Dialer{
		Options:         rsocket.Options{SendBuffer: 1 << 20, RecvBuffer: 1 << 20},
		WaitForListener: true,
	}
	c, err := d.DialRSocket(ctx, "tcp", "10.0.0.1:7471")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "hello"); err != nil {
		log.Fatal(err)
	}
	c.CloseWrite() // the server reads io.EOF after "hello"
	io.Copy(os.Stdout, c)
}

// An echo server: each connection's bytes go back to it until the peer
// closes its sending side. io.Copy from and to a Conn works on the
// registered rings directly (Conn.WriteTo, Conn.ReadFrom).
func ExampleListenConfig() {
	lc := rsocket.ListenConfig{Options: rsocket.Options{KeepAlive: 30 * time.Second}}
	l, err := lc.Listen(context.Background(), "tcp", ":7471")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func(c net.Conn) {
			defer c.Close()
			io.Copy(c, c)
		}(c)
	}
}
