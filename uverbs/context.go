// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/sys"
	"github.com/rdmago/rdmago/internal/sysfs"
)

// Context is an open RDMA device (struct ibv_context): the uverbs file
// descriptor and everything created through it. Open one with Open (LookupDevice finds
// a device's name); the caller must Close it.
//
// Closing a Context closes what is still open in dependency order — QPs, SRQs,
// AHs, CQs, MRs, PDs, completion channels — and then the device. Objects may
// also be closed individually, children first (a CQ cannot be destroyed while a
// QP uses it: the kernel answers EBUSY). Once an object or its Context is
// closed, its methods that would reach the kernel fail with ErrClosed — the
// kernel reuses handles, so a stale one would act on a later object — while
// accessors keep answering from what they cached; Close stays idempotent.
//
// Concurrency: creating, modifying, querying and closing objects is safe from
// any goroutine. The data path is not: each QP must be posted to by one
// goroutine at a time (PostSend and PostRecv may run in two different
// goroutines), each SRQ by one, and each CQ polled by one. Completion channels
// and the async event stream may be waited on from any goroutine.
type Context struct {
	dev  Device
	prov *provider
	fd   int
	res  *resources

	numCompVectors int
	coreSupport    uint64
	capsEx         uint64 // device_cap_flags_ex, 0 if unknown
	odpGeneral     uint64 // odp_caps.general_caps (IB_UVERBS_ODP_SUPPORT, ...)
	odpRC          uint32 // odp_caps.per_transport_caps.rc_odp_caps
	viaIoctl       bool   // GET_CONTEXT went through RDMA_VERBS_IOCTL

	async *eventFile

	cmdMu  sync.RWMutex // write lock only to close the fd
	closed bool

	mu         sync.Mutex
	objs       [numKinds]map[object]struct{}
	byHandle   map[uint64]any
	nextHandle uint64

	cleanup runtime.Cleanup
}

// Kinds of object, in the order Context.Close destroys them.
const (
	kindQP = iota
	kindSRQ
	kindAH
	kindCQ
	kindMW // before the MRs: rxe refuses to deregister an MR with windows bound
	kindMR
	kindPD
	kindChannel
	numKinds
)

type object interface{ Close() error }

// resources is what the Context's cleanup backstop releases when a Context
// becomes unreachable without Close: the fd, the queue mappings and the
// pinned memory. It holds no pointer back to the Context.
type resources struct {
	mu   sync.Mutex
	fd   int
	maps map[*byte][]byte
	pins map[*runtime.Pinner]struct{}
}

func (r *resources) addMap(b []byte) {
	r.mu.Lock()
	r.maps[unsafe.SliceData(b)] = b
	r.mu.Unlock()
}

func (r *resources) unmap(b []byte) error {
	if b == nil {
		return nil
	}
	r.mu.Lock()
	delete(r.maps, unsafe.SliceData(b))
	r.mu.Unlock()
	return sys.Munmap(b)
}

func (r *resources) addPin(p *runtime.Pinner) {
	r.mu.Lock()
	r.pins[p] = struct{}{}
	r.mu.Unlock()
}

func (r *resources) unpin(p *runtime.Pinner) {
	r.mu.Lock()
	delete(r.pins, p)
	r.mu.Unlock()
	p.Unpin()
}

func (r *resources) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.maps {
		sys.Munmap(b)
	}
	clear(r.maps)
	for p := range r.pins {
		p.Unpin()
	}
	clear(r.pins)
	if r.fd >= 0 {
		sys.Close(r.fd)
		r.fd = -1
	}
}

// Open is ibv_open_device on the device called name ("rxe0", or its uverbs
// node "uverbs0"; "" means the only device, and fails naming them when there
// are several): it opens the device's uverbs character device, checks the
// kernel's uverbs ABI (version 6, Linux 2.6.37+) and the driver's, and
// allocates the user context (GET_CONTEXT, through the ioctl interface of
// Linux 4.20+ with a fallback to write()). LookupDevice finds a device's
// name from its netdev, address or node GUID. The caller must Close the
// Context, after every object created from it.
func Open(name string) (*Context, error) {
	d, err := LookupDevice(DeviceQuery{Name: name})
	if err != nil {
		return nil, fmt.Errorf("open rdma device: %w", err)
	}
	return openDevice(d)
}

// openDevice opens d (see Open).
func openDevice(d Device) (*Context, error) {
	if v, err := sysRoot.ABIVersion(sysfs.ClassVerbs); err == nil && v != abi.IB_USER_VERBS_ABI_VERSION {
		return nil, fmt.Errorf("open %s: kernel uverbs ABI version %d, rdmago speaks %d: %w", d.Name, v, abi.IB_USER_VERBS_ABI_VERSION, ErrNotSupported)
	}
	prov, err := providerFor(d)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", d.Name, err)
	}
	fd, err := sys.Open(d.Path)
	if err != nil {
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			return nil, fmt.Errorf("open %s: %w (the uverbs device needs read-write access: check its permissions or the rdma group)", d.Path, err)
		}
		if errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("open %s: %w (%w: %s)", d.Path, err, ErrNoDevice, noDeviceHint)
		}
		return nil, fmt.Errorf("open %s: %w", d.Path, err)
	}
	c := &Context{
		dev:      d,
		prov:     prov,
		fd:       fd,
		res:      &resources{fd: fd, maps: map[*byte][]byte{}, pins: map[*runtime.Pinner]struct{}{}},
		byHandle: map[uint64]any{},
	}
	for i := range c.objs {
		c.objs[i] = map[object]struct{}{}
	}
	c.cleanup = runtime.AddCleanup(c, (*resources).release, c.res)
	asyncFD, err := c.getContext()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("open %s: get context: %w", d.Name, err)
	}
	if asyncFD >= 0 {
		if c.async, err = newEventFile(asyncFD, "async events of "+d.Name); err != nil {
			c.Close()
			return nil, fmt.Errorf("open %s: %w", d.Name, err)
		}
	}
	if a, err := c.QueryDeviceEx(); err == nil {
		c.capsEx = a.DeviceCapFlagsEx
		c.odpGeneral, c.odpRC = a.ODPGeneralCaps, a.RCODPCaps
	}
	return c, nil
}

// Device describes the device the Context was opened on.
func (c *Context) Device() Device { return c.dev }

// NumCompVectors is the number of completion vectors of the device.
func (c *Context) NumCompVectors() int { return c.numCompVectors }

// Close is ibv_close_device. It destroys every object still open (see
// Context) and closes the device; it is idempotent.
func (c *Context) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	var lists [numKinds][]object
	for k := range c.objs {
		for o := range c.objs[k] {
			lists[k] = append(lists[k], o)
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, l := range lists {
		for _, o := range l {
			if err := o.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.async != nil {
		if err := c.async.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	c.cmdMu.Lock()
	c.mu.Lock()
	c.closed = true
	// Objects whose destroy failed die with the fd: none may keep pointing
	// into the mappings released below.
	var left []object
	for k := range c.objs {
		for o := range c.objs[k] {
			left = append(left, o)
		}
		clear(c.objs[k])
	}
	clear(c.byHandle)
	c.mu.Unlock()
	// Wait out the data path of what is left before the rings are unmapped
	// and the doorbell's descriptor number is freed for reuse (the gates
	// take no lock: commands holding an object's lock wait for cmdMu).
	for _, o := range left {
		if g, ok := o.(interface{ dataGate() *dataGate }); ok {
			g.dataGate().shut()
		}
	}
	c.cleanup.Stop()
	c.res.release() // closes the fd
	c.fd = -1
	c.cmdMu.Unlock()
	for _, o := range left {
		if a, ok := o.(interface{ abandon() }); ok {
			a.abandon()
		}
	}
	return errors.Join(errs...)
}

// track registers a new object under kind and, for objects the kernel
// reports events about, assigns its user handle.
func (c *Context) track(kind int, o object) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, ErrClosed
	}
	c.objs[kind][o] = struct{}{}
	c.nextHandle++
	c.byHandle[c.nextHandle] = o
	return c.nextHandle, nil
}

func (c *Context) forget(kind int, o object, handle uint64) {
	c.mu.Lock()
	delete(c.objs[kind], o)
	delete(c.byHandle, handle)
	c.mu.Unlock()
}

func (c *Context) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *Context) lookup(handle uint64) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byHandle[handle]
}

// write issues one legacy write() command: header, then req (core command and
// driver input). The command's response field must already point at resp
// (respLen bytes: core response then driver response), which is pinned for
// the duration of the call.
func (c *Context) write(command uint32, req []byte, resp unsafe.Pointer, respLen uintptr) error {
	h, err := abi.NewCmdHdr(command, len(req), int(respLen))
	if err != nil {
		return err
	}
	buf := make([]byte, 8+len(req))
	copy(buf, abi.Bytes(&h))
	copy(buf[8:], req)
	var pin runtime.Pinner
	if resp != nil {
		pin.Pin(resp)
		defer pin.Unpin()
	}
	c.cmdMu.RLock()
	defer c.cmdMu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	n, err := sys.Write(c.fd, buf)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return fmt.Errorf("short write %d of %d: %w", n, len(buf), syscall.EIO)
	}
	return nil
}

// rawWrite is write for a command without a response that the kernel
// completes without sleeping (REQ_NOTIFY_CQ), on the data path: a raw
// system call (sys.RawWrite), and no allocation when req does not escape.
func (c *Context) rawWrite(command uint32, req []byte) error {
	h, err := abi.NewCmdHdr(command, len(req), 0)
	if err != nil {
		return err
	}
	var buf [64]byte
	if 8+len(req) > len(buf) {
		return fmt.Errorf("uverbs command %d: %d bytes, more than a raw write takes: %w", command, len(req), syscall.EINVAL)
	}
	copy(buf[:], abi.Bytes(&h))
	copy(buf[8:], req)
	c.cmdMu.RLock()
	defer c.cmdMu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	n, err := sys.RawWrite(c.fd, buf[:8+len(req)])
	if err != nil {
		return err
	}
	if n != 8+len(req) {
		return fmt.Errorf("short write %d of %d: %w", n, 8+len(req), syscall.EIO)
	}
	return nil
}

// writeEx issues an extended write() command.
func (c *Context) writeEx(command uint32, core, drv []byte, resp unsafe.Pointer, coreOut, drvOut int) error {
	h, x, err := abi.NewExCmdHdr(command, len(core), len(drv), coreOut, drvOut, abi.PtrU64(resp))
	if err != nil {
		return err
	}
	buf := make([]byte, 24+len(core)+len(drv))
	copy(buf, abi.Bytes(&h))
	copy(buf[8:], abi.Bytes(&x))
	copy(buf[24:], core)
	copy(buf[24+len(core):], drv)
	var pin runtime.Pinner
	if resp != nil {
		pin.Pin(resp)
		defer pin.Unpin()
	}
	c.cmdMu.RLock()
	defer c.cmdMu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	if _, err := sys.Write(c.fd, buf); err != nil {
		return err
	}
	return nil
}

const maxIoctlAttrs = 8

type ioctlBuf struct {
	hdr   abi.IoctlHdr
	attrs [maxIoctlAttrs]abi.IoctlAttr
}

// ioctl issues one RDMA_VERBS_IOCTL method call and copies the attributes back
// into attrs (the kernel writes new handles, fds and the valid-output flags).
// Memory that PTR attributes point to must be pinned by the caller.
func (c *Context) ioctl(object, method uint16, attrs []abi.IoctlAttr) error {
	if len(attrs) > maxIoctlAttrs {
		return fmt.Errorf("ioctl with %d attributes: %w", len(attrs), syscall.EINVAL)
	}
	b := new(ioctlBuf)
	b.hdr = abi.IoctlHdr{
		Length:   abi.IoctlLength(len(attrs)),
		ObjectID: object,
		MethodID: method,
		NumAttrs: uint16(len(attrs)),
		DriverID: c.prov.driverID,
	}
	copy(b.attrs[:], attrs)
	c.cmdMu.RLock()
	defer c.cmdMu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	err := sys.Ioctl(c.fd, abi.RDMA_VERBS_IOCTL, unsafe.Pointer(b))
	copy(attrs, b.attrs[:len(attrs)])
	return err
}

// noIoctl reports whether an ioctl failure means "use write() instead":
// ENOTTY (no ioctl interface) or EPROTONOSUPPORT (method or mandatory
// attribute unknown), as libibverbs' execute_ioctl_fallback decides.
func noIoctl(err error) bool {
	return errors.Is(err, syscall.ENOTTY) || errors.Is(err, syscall.EPROTONOSUPPORT)
}

// getContext allocates the kernel's user context and returns the async event
// fd (or -1).
func (c *Context) getContext() (int, error) {
	var out struct {
		numCompVectors uint32
		_              uint32
		coreSupport    uint64
	}
	var pin runtime.Pinner
	pin.Pin(&out)
	attrs := []abi.IoctlAttr{
		abi.AttrPtr(abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, abi.PtrU64(unsafe.Pointer(&out.numCompVectors)), 4),
		abi.AttrPtr(abi.UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, abi.PtrU64(unsafe.Pointer(&out.coreSupport)), 8),
	}
	err := c.ioctl(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT, attrs)
	pin.Unpin()
	if err == nil {
		c.viaIoctl = true
		c.numCompVectors = int(out.numCompVectors)
		c.coreSupport = out.coreSupport
		// The ioctl interface creates the async event fd separately.
		fdAttr := []abi.IoctlAttr{abi.AttrFD(abi.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, 0)}
		if err := c.ioctl(abi.UVERBS_OBJECT_ASYNC_EVENT, abi.UVERBS_METHOD_ASYNC_EVENT_ALLOC, fdAttr); err != nil {
			if noIoctl(err) {
				return -1, nil
			}
			return -1, fmt.Errorf("alloc async event fd: %w", err)
		}
		return int(int32(fdAttr[0].Data)), nil
	}
	if !noIoctl(err) {
		return -1, err
	}
	resp := new(abi.GetContextResp)
	req := abi.GetContext{Response: abi.PtrU64(unsafe.Pointer(resp))}
	if err := c.write(abi.IB_USER_VERBS_CMD_GET_CONTEXT, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		return -1, err
	}
	c.numCompVectors = int(resp.NumCompVectors)
	return int(int32(resp.AsyncFD)), nil
}

// eventFile is a non-blocking event fd (completion channel, async events)
// parked on the Go netpoller.
type eventFile struct {
	f      *os.File
	rc     syscall.RawConn
	mu     sync.Mutex // one reader at a time: reads share the file's deadline
	closed atomic.Bool

	// Made once by newEventFile so that a read allocates nothing of its
	// own: tryRead reads into buf and leaves n and rerr (all under mu),
	// wake sets a past deadline to end a parked read (and woken, so
	// that the next read clears it: only then).
	buf     []byte
	n       int
	rerr    error
	tryRead func(fd uintptr) bool
	quiet   func() bool   // under mu: see read; tryRead's first call takes it
	reads   atomic.Uint64 // read(2) calls made (for tests)
	wake    func()
	woken   atomic.Bool
	watches [2]eventWatch // under mu: see watch
}

// eventWatch is one context registration of an eventFile: stop ends it;
// done is the context's Done channel, which says whether the next read's
// context is the same.
type eventWatch struct {
	done <-chan struct{}
	stop func() bool
}

func newEventFile(fd int, name string) (*eventFile, error) {
	if err := sys.PrepareEventFD(fd); err != nil {
		sys.Close(fd)
		return nil, fmt.Errorf("%s: set non-blocking: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join("uverbs", name))
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	e := &eventFile{f: f, rc: rc}
	e.tryRead = func(fd uintptr) bool {
		// RawConn.Read calls this once it has reset the netpoller's
		// readiness: a quiet channel parks without reading.
		if q := e.quiet; q != nil {
			e.quiet = nil
			if q() {
				return false
			}
		}
		// Raw: the fd never blocks, and a read through the scheduler's
		// system call entry would wake sysmon on every message (see
		// sys.RawRead).
		e.reads.Add(1)
		e.n, e.rerr = sys.RawRead(int(fd), e.buf)
		return e.rerr != syscall.EAGAIN
	}
	e.wake = func() {
		// The deadline first: a read that finds woken set clears it,
		// and one that does not yet either fails at once on it or was
		// woken by it, then finds its context done.
		e.f.SetReadDeadline(time.Unix(1, 0))
		e.woken.Store(true)
	}
	return e, nil
}

// Close closes the fd; a read blocked on it, or started later, fails with
// ErrClosed.
func (e *eventFile) Close() error {
	e.closed.Store(true)
	err := e.f.Close()
	e.mu.Lock()
	e.watch(0, nil)
	e.watch(1, nil)
	e.mu.Unlock()
	return err
}
