// Copyright 2026 The rdmago Authors.

// Package trace is the engine of rdmatrace: eBPF programs, written with
// cilium/ebpf's asm package (no C, no clang, no bpf2go), that show what any
// process does with RDMA, and the decoders that turn their records into
// strace-like lines, JSON and summaries.
//
// What is probed (kernel 5.8+ with kprobes and BTF; checked on Debian's 6.1
// and 6.12 in the lab):
//
//   - kprobe+kretprobe ib_uverbs_write: the ib_uverbs_cmd_hdr and the first
//     bytes of the command are read from the user buffer (bpf_probe_read_user)
//     at entry; at return the duration, the return value (negative errno) and,
//     for successful commands with a response, the first bytes of the response
//     (the pointer is the command's first u64, also for extended commands).
//   - kprobe+kretprobe ib_uverbs_ioctl: the ib_uverbs_ioctl_hdr (object,
//     method, attribute count), the attribute array and, at entry, the first
//     bytes of every input buffer; at return the array again (the kernel
//     writes new objects' handles into it) and every output it marked
//     UVERBS_ATTR_F_VALID_OUTPUT. These records are too big for the BPF
//     stack: they are built in a per-CPU scratch map (layout in event.go).
//     INVOKE_WRITE is named and decoded as the write command it carries.
//   - kprobe+kretprobe ib_uverbs_mmap: vm_pgoff and length (struct
//     vm_area_struct offsets from vmlinux BTF), and the result.
//   - kprobe+kretprobe ucma_write: the rdma_ucm command (its first 512
//     bytes, in a big record like ioctl's) and, for CREATE_ID, DESTROY_ID,
//     INIT_QP_ATTR and GET_EVENT, the response (so every process's CM events).
//   - tracepoint rdma_cma:cm_event_handler: event, status, cm_id, addresses,
//     with field offsets parsed from the tracepoint's format file.
//   - counting programs on the rxe functions of RXEPacketFuncs (all of
//     RXEFuncs with Options.RXEAll) present in /proc/kallsyms, keyed by QP
//     number where BTF (rdma_rxe's split BTF, then vmlinux) shows how to
//     reach it from the arguments: fentry programs where the kernel takes
//     them (BTF of rdma_rxe, 5.11+: a direct call per hit instead of a
//     kprobe) while no QP is active, kprobes otherwise (Options.RXEFentry,
//     Options.RXEKprobes force one). The QPs are tied to processes in user
//     space (owners.go), so that -p/-c filter these counts too.
//   - the data path, from two of those programs: rxe_cq_post also sends
//     every completion posted to a user CQ (its struct ib_uverbs_wc: QPN,
//     opcode, status, byte_len, wr_id) as a KindCompletion record, shown
//     in the name of the QP's owner; rxe_post_send (the doorbell of a user
//     QP, inside the POST_SEND write()) copies the last WQE of the send
//     ring (rxe_qp.sq.queue->buf, offsets from BTF) into that write's
//     record, so that the doorbell shows the work request it rang for
//     ("POST_SEND wr=RDMA_WRITE len=64 va=0x... rkey=0x857 flags=signaled").
//     Receives on a user QP ring no doorbell (rxe reads the receive ring
//     when a message arrives): they show only as their completions.
//
// Events reach user space through a ring buffer whose programs wake the
// reader only once a quarter of it is filled (the reader also polls every
// 100 ms); a record that finds it full is counted per kind of call (drops
// map), so that a loss says what was lost.
//
// The uverbs device of every call is found from file->f_inode->i_rdev. The
// entry probes keep their record in a hash map keyed by pid_tgid (the big
// records of ioctl and ucma_write in a map of their own); the return probe
// (one shared by the small records, one by the big) completes it and sends
// it through a ring buffer. The pid and comm filters run in the kernel.
//
// Names come from package abi (ABINames); the Names interface lets a caller
// substitute its own. The Formatter remembers which QPN each QP handle was
// created with, per process and device, and shows it next to the handle.
package trace
