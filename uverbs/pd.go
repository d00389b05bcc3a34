// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/sys"
)

// PD is a protection domain (struct ibv_pd). MRs, QPs, SRQs and AHs belong to
// one; only objects of the same PD work together. The caller must Close it
// after closing its children (Context.Close does all of it). Once the PD or
// its Context is closed, creating objects on it fails with ErrClosed: the
// kernel reuses the PD's handle for later objects, so it is never sent again.
type PD struct {
	ctx    *Context
	handle uint32
	uh     uint64
	handleLock
}

// AllocPD is ibv_alloc_pd.
func (c *Context) AllocPD() (*PD, error) {
	resp := new(abi.AllocPDResp)
	req := abi.AllocPD{Response: abi.PtrU64(unsafe.Pointer(resp))}
	if err := c.write(abi.IB_USER_VERBS_CMD_ALLOC_PD, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		return nil, fmt.Errorf("alloc pd: %w", err)
	}
	pd := &PD{ctx: c, handle: resp.PDHandle}
	uh, err := c.track(kindPD, pd)
	if err != nil {
		c.deallocPD(pd.handle)
		return nil, fmt.Errorf("alloc pd: %w", err)
	}
	pd.uh = uh
	return pd, nil
}

// Context is the Context the PD was allocated on.
func (pd *PD) Context() *Context { return pd.ctx }

func (c *Context) deallocPD(h uint32) error {
	req := abi.DeallocPD{PDHandle: h}
	return c.write(abi.IB_USER_VERBS_CMD_DEALLOC_PD, abi.Bytes(&req), nil, 0)
}

// Close is ibv_dealloc_pd. It fails with EBUSY while MRs, QPs, SRQs or AHs of
// the PD exist. It is idempotent.
func (pd *PD) Close() error {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return nil
	}
	if err := pd.ctx.deallocPD(pd.handle); err != nil {
		return fmt.Errorf("dealloc pd: %w", err)
	}
	pd.closed = true
	pd.ctx.forget(kindPD, pd, pd.uh)
	return nil
}

// handleLock is the lock and closed flag of an object whose handle commands
// name (PD, CQ, SRQ, completion channel): a command holds it read-locked
// while it uses the handle, Close holds it locked and sets closed, and from
// then on the handle, which the kernel hands to later objects, is never sent.
type handleLock struct {
	mu     sync.RWMutex
	closed bool
}

// rlockOpen read-locks the object for a command naming its handle; once the
// object is closed it fails, saying what (e.g. "reg mr: pd"), and leaves it
// unlocked.
func (l *handleLock) rlockOpen(what string) error {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return fmt.Errorf("%s: %w", what, ErrClosed)
	}
	return nil
}

// abandon marks the PD closed without a system call (see QP.abandon).
func (pd *PD) abandon() {
	pd.mu.Lock()
	pd.closed = true
	pd.mu.Unlock()
}

// MR is a memory region (struct ibv_mr): memory the device may access, with
// an lkey for local SGEs and an rkey for remote peers. The caller must Close
// it before freeing or reusing the memory for something else.
type MR struct {
	pd     *PD
	handle uint32
	lkey   uint32
	rkey   uint32
	buf    []byte
	access AccessFlags
	pin    *runtime.Pinner
	uh     uint64
	mu     sync.Mutex
	closed bool
}

// RegMR is ibv_reg_mr: it registers buf for the device with the given access.
// buf may be Go memory — it is pinned (runtime.Pinner) until Close — or memory
// from AllocBuffer. Remote write and remote atomic access need local write too
// (the verbs rule). The kernel pins the pages, which counts against
// RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK; ENOMEM errors say so.
//
// With AccessOnDemand (IBV_ACCESS_ON_DEMAND) the kernel pins nothing and
// counts nothing against RLIMIT_MEMLOCK: the device faults pages in as it
// touches them (AdviseMR prefetches them) and the kernel follows the
// process's page tables, so ordinary Go memory of any size can be
// registered. What rdmago relies on then is only that buf keeps its virtual
// address until Close: Go's collector does not move heap objects, and the
// runtime.Pinner is kept all the same, as the runtime's documented promise.
// If the memory under the MR is unmapped, a peer's access fails with an
// error completion. The device must report on-demand paging (QueryDeviceEx's
// ODPGeneralCaps, and RCODPCaps for each remote access asked for); rxe does
// in kernels newer than Linux 6.12. Otherwise RegMR fails with
// ErrNotSupported naming the kernel and what it lacks. Implicit ODP (a
// registration of the whole address space) has no call here: rxe does not
// offer it.
func (pd *PD) RegMR(buf []byte, access AccessFlags) (*MR, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("reg mr: empty buffer: %w", syscall.EINVAL)
	}
	if access&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && access&AccessLocalWrite == 0 {
		return nil, fmt.Errorf("reg mr: %v needs IBV_ACCESS_LOCAL_WRITE as well: %w", access, syscall.EINVAL)
	}
	c := pd.ctx
	if err := pd.rlockOpen("reg mr: pd"); err != nil {
		return nil, err
	}
	defer pd.mu.RUnlock()
	if access&(AccessFlushGlobal|AccessFlushPersistent) != 0 && c.capsEx&(abi.IB_UVERBS_DEVICE_FLUSH_GLOBAL|abi.IB_UVERBS_DEVICE_FLUSH_PERSISTENT) == 0 {
		return nil, fmt.Errorf("reg mr: %v: the device does not do FLUSH (Linux 6.2+): %w", access, ErrNotSupported)
	}
	odp := access&AccessOnDemand != 0
	if odp {
		if why := c.odpRefusal(access); why != "" {
			return nil, fmt.Errorf("reg mr: %v: %s: %w", access, why, ErrNotSupported)
		}
	}
	mr := &MR{pd: pd, buf: buf, access: access, pin: new(runtime.Pinner)}
	mr.pin.Pin(unsafe.SliceData(buf))
	c.res.addPin(mr.pin)
	addr := abi.PtrU64(unsafe.Pointer(unsafe.SliceData(buf)))
	resp := new(abi.RegMRResp)
	req := abi.RegMR{
		Response: abi.PtrU64(unsafe.Pointer(resp)), Start: addr, Length: uint64(len(buf)), HCAVA: addr,
		PDHandle: pd.handle, AccessFlags: uint32(access),
	}
	if err := c.write(abi.IB_USER_VERBS_CMD_REG_MR, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		c.res.unpin(mr.pin)
		if odp {
			return nil, fmt.Errorf("reg mr of %d bytes on demand: %w", len(buf), odpError(c, err))
		}
		return nil, fmt.Errorf("reg mr of %d bytes: %w", len(buf), memlockHint(err, len(buf)))
	}
	mr.handle, mr.lkey, mr.rkey = resp.MRHandle, resp.LKey, resp.RKey
	uh, err := c.track(kindMR, mr)
	if err != nil {
		mr.dereg()
		return nil, fmt.Errorf("reg mr: %w", err)
	}
	mr.uh = uh
	return mr, nil
}

// LKey is the key local SGEs use.
func (mr *MR) LKey() uint32 { return mr.lkey }

// RKey is the key a peer uses for RDMA READ, WRITE and atomics.
func (mr *MR) RKey() uint32 { return mr.rkey }

// Addr is the address of the first byte, as peers address it.
func (mr *MR) Addr() uint64 { return abi.PtrU64(unsafe.Pointer(unsafe.SliceData(mr.buf))) }

// Bytes is the registered memory.
func (mr *MR) Bytes() []byte { return mr.buf }

// Len is the registered length.
func (mr *MR) Len() int { return len(mr.buf) }

// SGE returns an SGE for n bytes at offset off of the region.
func (mr *MR) SGE(off, n int) SGE {
	if off < 0 || n < 0 || off+n > len(mr.buf) {
		panic(fmt.Sprintf("uverbs: SGE [%d, %d) outside MR of %d bytes", off, off+n, len(mr.buf)))
	}
	return SGE{Addr: mr.Addr() + uint64(off), Length: uint32(n), LKey: mr.lkey}
}

func (mr *MR) dereg() error {
	req := abi.DeregMR{MRHandle: mr.handle}
	if err := mr.pd.ctx.write(abi.IB_USER_VERBS_CMD_DEREG_MR, abi.Bytes(&req), nil, 0); err != nil {
		return err
	}
	mr.pd.ctx.res.unpin(mr.pin)
	return nil
}

// Close is ibv_dereg_mr. It is idempotent.
func (mr *MR) Close() error {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if mr.closed {
		return nil
	}
	if err := mr.dereg(); err != nil {
		return fmt.Errorf("dereg mr: %w", err)
	}
	mr.closed = true
	mr.pd.ctx.forget(kindMR, mr, mr.uh)
	return nil
}

// abandon marks the MR closed without a system call (see QP.abandon); the
// Context released its pin.
func (mr *MR) abandon() {
	mr.mu.Lock()
	mr.closed = true
	mr.mu.Unlock()
}

// Buffer is page-aligned anonymous memory outside the Go heap, for MRs
// (AllocBuffer). The caller must Close it after closing the MRs on it.
type Buffer struct {
	mu  sync.Mutex
	mem []byte
}

// AllocBuffer maps n bytes (rounded up to whole pages) of zeroed, page-aligned
// memory. It is not locked; registering it pins it.
func AllocBuffer(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("alloc buffer of %d bytes: %w", n, syscall.EINVAL)
	}
	ps := os.Getpagesize()
	size := (n + ps - 1) &^ (ps - 1)
	mem, err := sys.MmapAnon(size)
	if err != nil {
		return nil, fmt.Errorf("alloc buffer of %d bytes: mmap: %w", n, err)
	}
	return &Buffer{mem: mem[:n:size]}, nil
}

// Bytes is the buffer's memory (n bytes as requested; capacity is whole
// pages). It must not be used after Close.
func (b *Buffer) Bytes() []byte { return b.mem }

// Close unmaps the buffer. It is idempotent.
func (b *Buffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil {
		return nil
	}
	err := sys.Munmap(b.mem[:cap(b.mem)])
	b.mem = nil
	if err != nil {
		return fmt.Errorf("free buffer: %w", err)
	}
	return nil
}
