// Copyright 2026 The rdmago Authors.

// Package uverbs is RDMA verbs in Go without cgo: the equivalent of
// libibverbs plus its Soft-RoCE (rxe) provider, speaking the kernel's uverbs
// ABI (package abi) on /dev/infiniband/uverbsN directly.
//
// # Objects
//
// Open a device by name (Open; Devices lists them, LookupDevice finds one
// by netdev, IP address or node GUID) to get a Context, then allocate a PD, register memory (PD.RegMR, optionally on an
// AllocBuffer), create CQs (Context.CreateCQ, with a CompChannel to sleep on),
// QPs (PD.CreateQP, RC or UD; SRQs with PD.CreateSRQ; AHs for UD with
// PD.CreateAH), connect them (QP.ModifyToInit then QP.Connect, with the peer's
// Dest learnt out of band, e.g. with package oob's Client and Server, the
// exchange of rdma-core's ibv_rc_pingpong) and move data.
//
// Every object has an idempotent Close. Close children before parents (QP,
// SRQ, AH, then CQ, MR, then PD, then CompChannel), or just close the
// Context, which closes whatever is left in that order. A runtime cleanup
// releases the descriptor, mappings and pinned memory of a Context that
// becomes unreachable without Close, as a backstop only.
//
// # Data path
//
// The send, receive and completion rings are mapped from the kernel:
//   - QP.PostRecv and SRQ.PostRecv write receive WQEs into the ring: no
//     system call.
//   - QP.PostSend writes send WQEs into the ring and rings the doorbell once
//     per call: one write(2) of a preallocated POST_SEND command with no work
//     requests, which tells rxe to process its ring (QP.Doorbells counts them).
//   - CQ.Poll copies completions out of the ring: no system call.
//
// None of these allocates. CQ.Wait (WaitCQs for several CQs) is the one
// way to wait: it polls, and only when the CQ is empty arms it (CQ.Arm),
// polls again and sleeps in CompChannel.Wait, which parks the goroutine on
// the Go netpoller and honours its context; with completions already in the
// ring it makes no system call and allocates nothing. Asynchronous events (QP errors, port changes, SRQ
// limits) come from Context.WaitAsyncEvent the same way.
//
// # Concurrency
//
// Control operations (create, modify, query, close) are safe from any
// goroutine. A QP's send side, its receive side, an SRQ and a CQ may each be
// driven by one goroutine at a time; use one goroutine per QP and CQ, or lock.
//
// # Kernel
//
// Linux 5.10 or newer with rdma_rxe and ib_uverbs (tested whole on Debian's
// 6.1 and 6.12; a smoke set on Debian 11's 5.10 and on 7.3). FLUSH and
// ATOMIC_WRITE need 6.2+ and return ErrNotSupported before; memory windows
// need 5.12+ (ErrNotSupported before). On 5.10, whose rxe has no AH
// numbers, UD sends carry the whole address, as rdma-core's do.
// Registering memory pins it against RLIMIT_MEMLOCK (but see on-demand
// paging below).
//
// # What rxe offers, and what rdmago does with it
//
// Soft-RoCE on 6.1 and 6.12, verb by verb:
//
//   - RC, UC and UD QPs, SRQs (resize, limit), CQs (resize), AHs, async
//     events, every send opcode rxe takes (SEND/WRITE with immediate, READ,
//     both atomics; FLUSH and ATOMIC_WRITE on 6.2+): supported.
//   - Memory windows of both types (PD.AllocMW, QP.BindMW for type 1, a
//     WRBindMW work request for type 2), WRLocalInv, WRSendWithInv and
//     WC.InvalidatedRKey (rxe since 5.12): supported. Zero-based windows:
//     rxe refuses them, and so does rdmago (ErrNotSupported). rxe checks
//     an access through a window against the window's MR only, not the
//     window's own range (seen on 6.1): the rights and the invalidation
//     hold, the bounds are the MR's.
//   - Multicast attach/detach of UD QPs (QP.AttachMcast): supported, with
//     rdma_cm's join in package cm (ID.JoinMulticast).
//   - XRC (XRCD, XRC SRQ/QPs), RSS/WQs, flow steering, device memory,
//     DMA-BUF MRs, counters: rxe has none; rdmago has none.
//   - Fast-register MRs (IB_WR_REG_MR) and MR invalidation: rxe offers
//     them to kernel consumers only; user MRs cannot be invalidated, so
//     LOCAL_INV and SEND_WITH_INV target type 2 windows.
//   - REREG_MR: rxe has no rereg; deregister and register again.
//   - On-demand paging (RegMR with AccessOnDemand, PD.AdviseMR): rxe has
//     it in kernels newer than 6.12 (7.3 in the lab), for RC SEND, RECV,
//     RDMA WRITE and READ, atomics, FLUSH and ATOMIC_WRITE. The kernel
//     pins nothing, so ordinary Go memory registers without CAP_IPC_LOCK
//     or a raised RLIMIT_MEMLOCK; a peer's access to memory unmapped under
//     the MR ends in an error completion. rdmago decides from the device's
//     QueryDeviceEx ODP caps, and where they lack it (6.1, 6.12) RegMR and
//     AdviseMR fail with ErrNotSupported naming the kernel. Implicit ODP
//     (the whole address space in one MR): rxe does not offer it, and
//     rdmago has no call for it. Seen on Debian's 7.3.4: rxe's ODP copies
//     ignore the offset within a page, so the payload of an RDMA WRITE,
//     READ or SEND, and the value an atomic returns, land at the start of
//     the page instead of at their address (the atomics' targets and the
//     unmapped-memory error are right). A kernel bug, not rdmago's: the
//     lab's ODP tests fail there and say page by page where data landed.
//   - ibv_qp_ex/ibv_wr_* and ibv_cq_ex: rdma-core's library-side APIs over
//     the same rings; rdmago's SendWR and WC cover the opcodes and fields
//     rxe fills (no completion timestamps: rxe reports none).
//
// # Credentials
//
// The kernel accepts a command written to a uverbs descriptor only from a
// thread running with the very credentials the descriptor was opened with
// (ib_safe_file_access compares the kernel's cred objects, not the IDs);
// any other write fails with EACCES. Go's syscall.Setuid and syscall.Setgid
// change the credentials of each thread separately, so afterwards the
// threads hold different credentials objects: a Context opened before the
// call fails on every thread, and one opened after it works only from the
// thread that opened it. Drop privileges before exec instead
// (syscall.SysProcAttr.Credential, or setpriv/su around the program), so
// that the process starts with one set of credentials.
package uverbs
