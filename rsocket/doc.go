// Copyright 2026 The rdmago Authors.

// Package rsocket is librdmacm's rsockets in Go without cgo: stream
// connections over RDMA, as a net.Conn and a net.Listener, wire-compatible
// with rdma-core's rsocket(7) (rdma-core 44, Debian 12) so that Go programs
// talk to C programs using rsockets, to rstream/rcopy, and to unmodified
// socket programs under LD_PRELOAD=librspreload.so.
//
//	l, err := rsocket.Listen(ctx, "tcp", "10.0.0.1:7471")
//	http.Serve(l, handler)
//
//	c, err := rsocket.Dial(ctx, "tcp", "10.0.0.1:7471")
//	defer c.Close()
//
// # Like package net
//
// The API is package net's, so that code written against net keeps
// working: Dialer and ListenConfig are net.Dialer and net.ListenConfig
// (Dialer.Dial, Dialer.DialContext and ListenConfig.Listen return
// net.Conn and net.Listener, and Listener.Accept a net.Conn), and, as
// net.TCPListener.AcceptTCP does, the methods suffixed RSocket return the
// concrete types: Dialer.DialRSocket, ListenConfig.ListenRSocket,
// Listener.AcceptRSocket. The package-level Dial and Listen are the
// shortcuts for the zero Dialer and ListenConfig and return the concrete
// *Conn and *Listener, as net.DialTCP and net.ListenTCP do; unlike net's,
// they take a context first, because setting up an RDMA connection blocks
// on rdma_cm's exchanges. Settings are Options (what a C program sets with
// rsetsockopt), embedded in Dialer and ListenConfig, whose zero values are
// librdmacm's defaults; what only a dial needs (LocalAddr, Timeout,
// WaitForListener) is a field of Dialer, as in net.Dialer.
//
// # C programs under librspreload
//
// An unmodified socket program run with LD_PRELOAD=librspreload.so
// speaks rsockets only on the sockets librspreload intercepts: a socket
// opened with SOCK_CLOEXEC or SOCK_NONBLOCK in its type (CPython's
// socket module, OpenBSD's nc) or a connection accepted with accept4
// stays on TCP, silently. A Dial to such a server then finds nothing
// listening on the port (an error matching cm.ErrNoListener, which says
// so); run the server with a program that opens plain sockets, or serve
// with this package.
//
// # The protocol
//
// rdma_cm sets up an RC connection (package cm); each side's connection
// private data is struct rs_conn_data (version 1, byte-order flag, receive
// credits, the address and rkey of its target SGL, its first receive
// buffer). Bytes travel as RDMA WRITE WITH IMMEDIATE into the receive ring
// the peer published; the immediate data's top 3 bits say what a message
// is: data (bits 28:0 the length), a credit update (the new credit limit;
// the same write may put the next half of the receiver's ring into the
// sender's target SGL) or control (SHUTDOWN, DISCONNECT). Credits count
// data messages (the receiver's queue depth); four further control messages
// may be in flight, relying on RNR retries. Keepalive is librdmacm's
// zero-byte RDMA WRITE.
//
// Every value from the wire is checked: connection data of another
// version, with zero credits, an empty target SGL or buffer is refused
// (the listener rejects the request); a data message beyond the credits
// granted or larger than the buffer space published, a reserved message
// type or control code, or an SGL outside the peer's memory region (our
// RDMA WRITE fails with REMOTE ACCESS ERROR) fails the connection with an
// error matching ErrProtocol and disconnects it.
//
// # What is not implemented
//
// Datagram rsockets (SOCK_DGRAM over UD QPs and a UDP side channel),
// iomap (riomap/riowrite: this side publishes an iomap of size 0, so a C
// peer's riomap fails with ENOMEM and it has nothing to riowrite into),
// AF_IB addressing (the ib_connect_hdr before rs_conn_data), iWARP's
// send-based messages (RS_OPT_MSG_SEND), MSG_PEEK/MSG_WAITALL, and
// zero-copy: Write copies into the registered send ring (payloads up to
// Options.Inline go inline) and Read copies out of the receive ring.
// Unlike librdmacm (sq_sig_all), a Conn does not signal every send: short
// runs of inline data messages go unsignalled while nothing can wait for
// their completion, so an end waiting for a reply is not woken by the
// acknowledgement of its request. This is local to the QP; the wire is the
// same.
//
// # Errors, waiting, resources
//
// Errors are *net.OpError values wrapping the cause: os.ErrDeadlineExceeded
// after a deadline, net.ErrClosed after Close, syscall.ECONNRESET when the
// peer vanished without closing the stream (its process died), EPIPE for a
// write after CloseWrite or to a peer that closed; Read returns io.EOF after
// the peer's CloseWrite or Close. Waiting parks goroutines: each Conn has
// one goroutine asleep on its completion channel through Go's netpoller,
// woken only while a Read, Write or Close waits (the CQ is armed then).
// Steady-state Read and Write allocate nothing themselves (the host tests
// check it over an in-memory wire); one that has to sleep costs what
// uverbs' completion-event wait allocates.
//
// Linux with rdma_ucm and an RDMA device (tested with Soft-RoCE on Debian's
// 6.1 and 6.12 kernels). Every Conn and Listener must be Closed.
package rsocket
