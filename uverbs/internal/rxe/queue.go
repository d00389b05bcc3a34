// Copyright 2026 The rdmago Authors.

// Package rxe is the Soft-RoCE provider of package uverbs: the layout of the
// queues the rdma_rxe driver shares with user space and the encoding of the work
// requests and completions that travel through them. It is the one place that
// knows rxe's ring format (rdma-core's providers/rxe/rxe_queue.h and the
// kernel's drivers/infiniband/sw/rxe/rxe_queue.h describe the same thing); a
// provider with another format (siw's per-slot valid flags, mlx5's doorbell
// records) would be a sibling package offering the same operations:
// SendQueue.Post, RecvQueue.Post and CQ.Poll over mapped memory.
//
// Nothing here makes a system call. Queues are plain memory: the caller maps
// them (mmap of the uverbs fd at the cookie the create command returned) or,
// in tests, allocates them with NewMemQueue and plays the kernel's side.
//
// None of the types is safe for concurrent use: one goroutine produces into a
// send or receive queue, one consumes a CQ (the kernel is the other side).
package rxe

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

// HeaderSize is sizeof(struct rxe_queue_buf): slot 0 starts here.
const HeaderSize = int(unsafe.Sizeof(abi.RxeQueueBuf{}))

// Queue is one rxe queue: a struct rxe_queue_buf header followed by
// 1<<log2(slots) slots of 1<<Log2ElemSize bytes. One side produces, the other
// consumes; indices are stored masked. The queue is empty when the two indices
// are equal and full when advancing the producer would make them equal, so a
// queue of n slots holds at most n-1 elements.
//
// Memory ordering follows rdma-core and the kernel (rxe_queue.h): each side
// reads its own index relaxed, the other side's with acquire, and publishes its
// own with release after writing (or before reusing) the slot. Go's sync/atomic
// operations are sequentially consistent, which is at least that strong.
type Queue struct {
	mem  []byte
	prod *atomic.Uint32
	cons *atomic.Uint32
	data unsafe.Pointer
	log2 uint32 // copied out of the header once: the kernel never reads ours
	mask uint32
}

// ErrBadQueue reports a mapped queue whose header does not describe a queue
// that fits in the mapping.
var ErrBadQueue = errors.New("rxe: queue header inconsistent with its mapping")

// NewQueue interprets mem (a whole mapping, 8-byte aligned) as an rxe queue.
// The header's element size and index mask are read once and checked against
// len(mem), so a corrupt header cannot make later accesses leave the mapping.
func NewQueue(mem []byte) (*Queue, error) {
	if len(mem) < HeaderSize || uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%8 != 0 {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadQueue, len(mem))
	}
	h := (*abi.RxeQueueBuf)(unsafe.Pointer(unsafe.SliceData(mem)))
	log2 := atomic.LoadUint32(&h.Log2ElemSize)
	mask := atomic.LoadUint32(&h.IndexMask)
	if log2 < 4 || log2 > 16 || mask == 0 || mask&(mask+1) != 0 {
		return nil, fmt.Errorf("%w: log2_elem_size %d, index_mask %#x", ErrBadQueue, log2, mask)
	}
	if need := uint64(HeaderSize) + uint64(mask+1)<<log2; need > uint64(len(mem)) {
		return nil, fmt.Errorf("%w: %d slots of %d bytes need %d bytes, mapping has %d", ErrBadQueue, mask+1, 1<<log2, need, len(mem))
	}
	return &Queue{
		mem:  mem,
		prod: (*atomic.Uint32)(unsafe.Pointer(&h.ProducerIndex)),
		cons: (*atomic.Uint32)(unsafe.Pointer(&h.ConsumerIndex)),
		data: unsafe.Add(unsafe.Pointer(h), HeaderSize),
		log2: log2,
		mask: mask,
	}, nil
}

// NewMemQueue allocates a queue in ordinary memory with room for at least n
// elements of at least elemSize bytes, sized the way the kernel sizes them
// (rxe_queue_init: elements rounded up to a power of two, slots to the next
// power of two above n). It is for tests and benchmarks that play the kernel.
func NewMemQueue(n, elemSize int) *Queue {
	log2 := uint32(bits.Len(uint(elemSize - 1)))
	slots := uint32(1) << bits.Len(uint(n))
	words := make([]uint64, (HeaderSize+int(slots)<<log2)/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	h := (*abi.RxeQueueBuf)(unsafe.Pointer(&words[0]))
	h.Log2ElemSize = log2
	h.IndexMask = slots - 1
	q, err := NewQueue(mem)
	if err != nil {
		panic(err)
	}
	return q
}

// Mem is the queue's memory, header included.
func (q *Queue) Mem() []byte { return q.mem }

// Slots is the number of slots; the queue holds at most Slots()-1 elements.
func (q *Queue) Slots() int { return int(q.mask) + 1 }

// SlotSize is the size of one slot in bytes.
func (q *Queue) SlotSize() int { return 1 << q.log2 }

// Slot returns the address of slot i (masked).
func (q *Queue) Slot(i uint32) unsafe.Pointer {
	return unsafe.Add(q.data, uintptr(i&q.mask)<<q.log2)
}

// Len is the number of elements between consumer and producer.
func (q *Queue) Len() int { return int((q.prod.Load() - q.cons.Load()) & q.mask) }

// Producer side.

// Full reports whether the producer must wait for the consumer.
func (q *Queue) Full() bool {
	return (q.prod.Load()+1)&q.mask == q.cons.Load()&q.mask
}

// Free is how many elements can be produced before the queue is full.
func (q *Queue) Free() int { return int(q.mask) - q.Len() }

// ProducerSlot returns the slot the next produced element goes into. The
// caller checks Full first.
func (q *Queue) ProducerSlot() unsafe.Pointer { return q.Slot(q.prod.Load()) }

// Produce publishes the element written into ProducerSlot (release).
func (q *Queue) Produce() { q.prod.Store((q.prod.Load() + 1) & q.mask) }

// Consumer side.

// Empty reports whether there is nothing to consume.
func (q *Queue) Empty() bool { return q.prod.Load()&q.mask == q.cons.Load()&q.mask }

// ConsumerSlot returns the oldest unconsumed slot. The caller checks Empty
// first.
func (q *Queue) ConsumerSlot() unsafe.Pointer { return q.Slot(q.cons.Load()) }

// Consume releases the slot returned by ConsumerSlot to the producer.
func (q *Queue) Consume() { q.cons.Store((q.cons.Load() + 1) & q.mask) }
