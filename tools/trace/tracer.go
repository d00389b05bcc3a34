// Copyright 2026 The rdmago Authors.

package trace

// Options configure a Tracer.
type Options struct {
	PID  int    // trace only this process (tgid); 0 traces all
	Comm string // trace only processes with this command name; "" traces all

	// NoRXE skips the rxe data-path probes.
	NoRXE bool
	// NoCM skips the rdma_cma:cm_event_handler tracepoint.
	NoCM bool
	// RingBytes is the ring buffer size (a power of two, at least a page);
	// 0 means 1 MiB.
	RingBytes int
}

// Probe is the state of one attach point.
type Probe struct {
	Name     string // "kprobe:ib_uverbs_write", "tracepoint:rdma_cma:cm_event_handler", ...
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
}

// QPNUnknown is RXECount.QPN when the probe could not read the QP number.
const QPNUnknown = qpnUnknown
