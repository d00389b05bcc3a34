package transfer

import (
	"context"
)

// Transport is the connection the file protocol runs over: a reliable,
// ordered channel for control messages plus one-sided writes with an
// immediate into memory the peer registered. It is what an RC queue pair
// with SEND/RECV and RDMA_WRITE_WITH_IMM gives (package transfer/rdma), and
// what transfertest.Pipe imitates for tests.
//
// Ordering: everything one end posts — messages and writes — arrives at the
// other end in the order it was posted, and a write's data is in place before
// its Arrival is received.
//
// Flow control: an end must not have more than MaxSlots() writes plus
// ControlDepth messages outstanding at its peer (posted but not yet taken by
// the peer's Receive); the protocol guarantees it (credits bound the writes,
// and no end sends more than ControlDepth messages without the peer reading).
//
// A transport that implements WritePreparer takes writes only after
// PrepareWrites: until then at most ControlDepth messages, and no writes,
// may be outstanding at it.
//
// A Transport is driven by one goroutine at a time.
type Transport interface {
	// Send sends one encoded control message of at most MaxMessageSize bytes.
	// msg may be reused once Send returns.
	Send(ctx context.Context, msg []byte) error
	// Receive waits for the next arrival from the peer. With ctx already
	// done it takes an arrival that is already there and otherwise fails
	// with ctx's error at once: a poll.
	Receive(ctx context.Context) (Arrival, error)
	// Register allocates size bytes registered with the transport. With
	// remoteWrite the peer may write into them at Region.Remote() until the
	// Region is closed; otherwise they are a local source for WriteImm.
	Register(size int, remoteWrite bool) (Region, error)
	// WriteImm posts a write of src.Bytes()[srcOff:srcOff+n] to dst at dstOff
	// (relative to dst.Addr), with the immediate imm. It may return before the
	// write completes; src's bytes must stay unchanged until the peer has
	// received the write (which a credit proves) or Drain returned.
	WriteImm(ctx context.Context, src Region, srcOff, n int, dst RemoteRegion, dstOff uint64, imm uint32) error
	// Drain waits until every write and message posted so far has completed
	// locally and returns the first error any of them had.
	Drain(ctx context.Context) error
	// MaxSlots is the most writes this transport can have outstanding at the
	// peer (its receive queue depth less ControlDepth).
	MaxSlots() int
	// Close ends the connection and releases what it holds, including
	// Regions not yet closed. It is idempotent.
	Close() error
}

// WritePreparer is implemented by a Transport that holds back, until told,
// the resources the peer's writes consume (transfer/rdma: the receives a
// write with immediate takes, and their buffers), so that a connection whose
// peer has not authenticated costs only what its handshake needs. The
// Receiver calls PrepareWrites once the sender authenticated (after HELLO,
// and AUTH with a pre-shared key), before any WINDOW, with the most slots a
// window of the connection will have.
type WritePreparer interface {
	// PrepareWrites makes room for n writes outstanding from the peer (at
	// most MaxSlots()). It may register memory; an error means it could
	// not, and the connection cannot take a window of n slots.
	PrepareWrites(n int) error
}

// ControlDepth is how many control messages each end can have outstanding
// at its peer; transports size their receive queues for MaxSlots() writes
// plus this many messages.
const ControlDepth = 16

// MaxMessageSize is the largest control message, in bytes: what a
// Transport's Send takes and its receive buffers hold.
const MaxMessageSize = 2048

// Arrival is one thing received from the peer: a control message, or the
// notice of a completed write with immediate.
type Arrival struct {
	// Write is set for a write; otherwise Msg is an encoded control
	// message, valid until the next Receive.
	Write bool
	Msg   []byte
	// Imm and Len describe a completed write: its immediate and its length.
	Imm uint32
	Len int
}

// Region is memory registered with a Transport.
type Region interface {
	// Bytes is the registered memory. It must not be used after Close.
	Bytes() []byte
	// Remote says where the peer may write (zero for a local-only region).
	Remote() RemoteRegion
	// Close deregisters the memory (ibv_dereg_mr) and frees it: from then on
	// the peer's writes fail. It is idempotent.
	Close() error
}

// RemoteRegion is memory the peer exposed: its address and key (rkey) as the
// peer's device knows them, and its length.
type RemoteRegion struct {
	Addr uint64
	RKey uint32
	Len  uint64
}

// Listener hands out the connections the Receiver serves.
type Listener interface {
	// Accept waits for the next connection; the caller closes it.
	Accept(ctx context.Context) (Transport, error)
	// Close stops listening; Accept then fails. It is idempotent.
	Close() error
	// Addr says where the listener listens, for messages.
	Addr() string
}
