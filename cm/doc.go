// Copyright 2026 The rdmago Authors.

// Package cm is the RDMA connection manager (librdmacm's rdma_cm) in Go
// without cgo: it speaks the kernel's ucma write() ABI (package abi,
// rdma_user_cm.h, ABI 4) on /dev/infiniband/rdma_cm and drives the verbs
// objects through package uverbs. It is wire-compatible with rdma-core's
// tools (rping, udaddy, rdma_server/rdma_client; see cmd/rdmaping).
//
// # Connections, like package net
//
//	l, err := cm.Listen(ctx, "10.0.0.1:7174", &cm.Options{Setup: postReceives})
//	c, err := l.Accept(ctx)   // an RC connection, QP in RTS
//
//	c, err := cm.Dial(ctx, "10.0.0.1:7174", &cm.Options{PrivateData: hello})
//	defer c.Close()
//	c.QP().PostSend(...); c.SendCQ().Poll(...)
//	n, cq, err := c.Wait(ctx, wcs) // or sleep until completions come or the peer leaves
//
// Dial resolves the address and the route, opens the device the route goes
// through, creates a PD, a completion channel, CQs and a QP (or uses the
// caller's, Options.PD and friends), moves the QP to INIT, runs
// Options.Setup (register memory and post receives there), then
// Options.PrivateDataFunc (private data that names what Setup made, such
// as an MR's address and rkey), connects, and
// on CONNECT_RESPONSE moves the QP to RTR and RTS with the attributes the
// CM computes (INIT_QP_ATTR) and sends the RTU, as librdmacm does. Accept
// mirrors it and negotiates the RDMA READ/atomic depths like rdma_accept.
// Listener.AcceptRequest gives the request first, to read its private data
// and Accept or Reject it with private data of its own;
// Options.CheckRequest does the same for the requests Accept reads. DialUD and
// ListenUD do the same for unreliable datagrams (RDMA_PS_UDP, resolved with
// the IB CM's SIDR exchange): the Conn then knows the peer's QPN, QKey and
// an AH for it.
//
// A Conn's Done channel closes when the peer disconnects (or vanishes: a
// killed process's kernel disconnects for it) or the device is removed;
// the QP is then moved to the error state, so posted work flushes and a
// waiting reader wakes. Close disconnects gracefully, waits (bounded by
// Options.CloseTimeout) for the CM to confirm, drains the flushed
// completions and destroys QP, CQs, channel, memory regions registered with
// Conn.RegMR, PD and rdma_cm id in that order. It is idempotent.
//
// Failures name the CM event and its status: *EventError, matching
// ErrNoListener and ErrRejected (REJECTED, with the reject reason and the
// peer's private data), ErrUnreachable, ErrAddrResolution,
// ErrRouteResolution, ErrConnect, ErrDisconnected, ErrDeviceRemoved, and
// the errno of a negative status (syscall.ETIMEDOUT, ...).
//
// # The listener under hostile requesters
//
// Listener.Accept reads the requests in one goroutine and sets each up in
// its own, so that no requester holds up another. It promises:
//
//   - A deadline per setup: a connection not ESTABLISHED within
//     Options.AcceptTimeout (10 s) of its request is dropped. A half-open
//     connect (the CONNECT_RESPONSE answered by no RTU) costs one pending
//     setup for that long, not the listener.
//   - A cap on setups, oldest out: at most Options.MaxPendingAccepts (64)
//     run at once; a further request evicts the oldest one still waiting
//     for its requester, as a SYN queue drops its oldest entry. As many
//     connections set up and not yet taken by Accept may wait; beyond that
//     requests are rejected at once (Options.BusyRejectData).
//   - The requester's failures are the requester's: a request
//     Options.CheckRequest refuses is rejected; a requester that rejects
//     (its reject, reason 28, when it gives up), vanishes, is unreachable,
//     times out or is evicted is dropped. Each is counted
//     (Listener.Stats), logged (Options.Logf) and skipped: Accept fails
//     only with the listener's own end (ErrClosed, the listening ID's
//     failure, ctx) or a setup that failed on this side, which is
//     temporary (its Temporary method says so, as http.Serve expects).
//
// Not limited: the rate of requests itself (each costs the CM's work and
// a QP's setup) and the Logf lines a storm produces. AcceptRequest leaves
// all of this to its caller.
//
// # IDs and the event channel
//
// Underneath, Channel is an rdma_event_channel: one non-blocking rdma_cm
// descriptor parked on Go's netpoller and one goroutine that reads every
// event (GET_EVENT) and hands it to its ID, found by the kernel's id
// number (CONNECT_REQUEST by the listener's cookie, creating the new ID).
// However many connections a channel carries, waiting for CM events holds
// goroutines, never threads. Reading an event and dispatching it happen
// under the channel's lock, so the events_reported count DESTROY_ID returns
// is checked exactly against the events delivered (a mismatch is an error
// and is counted in Stats), and an ID number the kernel reuses never gets a
// destroyed ID's events. Dial and Listen share one process-wide channel
// opened on first use and closed with its last user; Options.Channel picks
// another.
//
// ID is an rdma_cm_id with the operations of librdmacm: Bind, ResolveAddr
// and ResolveRoute (which wait for their events, with the kernel's timeout
// and the context), Query/QueryGID/QueryPath/QueryRoute, Listen,
// GetRequest, Connect, Establish, Accept, Reject (with a reason and private
// data), Disconnect, InitQPAttr, SetTOS, SetReuseAddr, SetAFOnly, SetAckTimeout,
// Notify, JoinMulticast, WaitEvent and Close. Private data is checked against
// what the CM message carries (56 bytes in an RC connect, 196 in an accept,
// 148 in a reject, 180 and 136 for UD): ErrPrivateDataTooLong.
//
// # Kernel and devices
//
// Linux with rdma_ucm and an RDMA device (tested with Soft-RoCE on Debian's
// 6.1 and 6.12, one VM and two VMs over a virtual wire); QUERY needs Linux
// 3.13+. Opening /dev/infiniband/rdma_cm needs read-write access to it.
package cm
