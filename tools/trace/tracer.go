// Copyright 2026 The rdmago Authors.

package trace

// Options configure a Tracer.
type Options struct {
	PID  int    // trace only this process (tgid); 0 traces all
	Comm string // trace only processes with this command name; "" traces all

	// NoRXE skips the rxe data-path probes.
	NoRXE bool
	// RXEAll counts every function of RXEFuncs, rxe's internal steps too
	// (task scheduling, requester/completer/responder runs, packets queued
	// to them): some ten hits per packet instead of the two of
	// RXEPacketFuncs, counted by default.
	RXEAll bool
	// RXEFentry attaches the rxe counters as fentry programs where the
	// kernel takes them (kprobes elsewhere) even while rxe QPs may be
	// moving packets. By default New takes fentry programs (a direct call
	// per hit, cheaper than a kprobe: on the lab's 6.12 rdmaperf write_bw
	// kept 0.93 of its throughput under rdmatrace --summary instead of
	// 0.84) only while no QP is past INIT (movingQPs, asked of RDMA netlink
	// before each attach) and kprobes otherwise: in the QEMU lab (TCG)
	// attaching fentry programs while rxe was busy crashed 6.12 twice out
	// of two ("Oops: int3" at rxe_rcv+0x5, the ftrace site being patched);
	// attached before the traffic they never did.
	RXEFentry bool
	// RXEKprobes attaches the rxe counters as kprobes even where fentry
	// programs could be taken.
	RXEKprobes bool
	// NoCM skips the rdma_cma:cm_event_handler tracepoint.
	NoCM bool
	// RingBytes is the ring buffer size (a power of two, at least a page);
	// 0 means 1 MiB.
	RingBytes int
}

// Probe is the state of one attach point.
type Probe struct {
	Name     string // "kprobe:ib_uverbs_write", "tracepoint:rdma_cma:cm_event_handler", "fentry:rxe_rcv", ...
	Attached bool
	Err      error  // why it is not attached
	Note     string // what it records (rxe: how the QPN is found)
}

// RXECount is the number of hits of one rxe function for one QP.
type RXECount struct {
	Func  string
	QPN   uint32 // QPNUnknown when the QP could not be read
	Error bool   // rxe_cq_post: completions with a non-success status
	Count uint64
	// PID and Comm are the QP's owner when it is known (Formatter.OwnedRXE).
	PID  uint32 `json:"pid,omitempty"`
	Comm string `json:"comm,omitempty"`
}

// QPNUnknown is RXECount.QPN when the probe could not read the QP number.
const QPNUnknown = qpnUnknown
