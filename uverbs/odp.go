// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

// On-demand paging (ODP): an MR registered with AccessOnDemand is not pinned
// by the kernel. The device faults its pages in when it touches them and the
// kernel's MMU notifier takes them away when the process unmaps or the
// kernel migrates them, so the region does not count against
// RLIMIT_MEMLOCK. rxe offers it where the kernel has rxe_odp.c (newer than
// Linux 6.12), built with CONFIG_INFINIBAND_ON_DEMAND_PAGING; rdmago decides
// from the device's own report (QueryDeviceEx's ODP caps), never from the
// kernel's version.

// odpAccess maps the remote access flags to the RC ODP capability each needs.
var odpAccess = []struct {
	access AccessFlags
	cap    uint32
	name   string
}{
	{AccessRemoteWrite, abi.IB_UVERBS_ODP_SUPPORT_WRITE, "IB_UVERBS_ODP_SUPPORT_WRITE"},
	{AccessRemoteRead, abi.IB_UVERBS_ODP_SUPPORT_READ, "IB_UVERBS_ODP_SUPPORT_READ"},
	{AccessRemoteAtomic, abi.IB_UVERBS_ODP_SUPPORT_ATOMIC, "IB_UVERBS_ODP_SUPPORT_ATOMIC"},
	{AccessFlushGlobal | AccessFlushPersistent, abi.IB_UVERBS_ODP_SUPPORT_FLUSH, "IB_UVERBS_ODP_SUPPORT_FLUSH"},
}

// kernelName is "Linux <uname -r>" for errors that say which kernel lacks
// something.
func kernelName() string {
	if r := sysRoot.Release(); r != "" {
		return "Linux " + r
	}
	return "this kernel"
}

// odpRefusal says why the device cannot register an on-demand MR with
// access, from its own ODP caps, or "" if it can.
func (c *Context) odpRefusal(access AccessFlags) string {
	if c.odpGeneral&abi.IB_UVERBS_ODP_SUPPORT == 0 {
		return fmt.Sprintf("%s on %s reports no on-demand paging (its ODP general caps lack IB_UVERBS_ODP_SUPPORT; rxe has it in kernels newer than 6.12 built with CONFIG_INFINIBAND_ON_DEMAND_PAGING)", c.dev.Name, kernelName())
	}
	var missing []string
	for _, o := range odpAccess {
		if access&o.access != 0 && c.odpRC&o.cap == 0 {
			missing = append(missing, o.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("%s on %s pages on demand, but its RC ODP caps lack %s, which %v needs", c.dev.Name, kernelName(), strings.Join(missing, ", "), access)
	}
	return ""
}

// odpError wraps the kernel's refusal of an on-demand registration: its
// EOPNOTSUPP becomes ErrNotSupported naming the kernel.
func odpError(c *Context, err error) error {
	if errors.Is(err, syscall.EOPNOTSUPP) {
		return fmt.Errorf("%s on %s refused on-demand paging: %w: %w", c.dev.Name, kernelName(), ErrNotSupported, err)
	}
	return err
}

// MRAdvice is enum ibv_advise_mr_advice: what AdviseMR asks the device to do
// with the pages of on-demand MRs.
type MRAdvice uint32

const (
	// AdvicePrefetch is IBV_ADVISE_MR_ADVICE_PREFETCH: fault the pages in
	// for reading.
	AdvicePrefetch MRAdvice = 0
	// AdvicePrefetchWrite is IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE: fault
	// them in writable.
	AdvicePrefetchWrite MRAdvice = 1
	// AdvicePrefetchNoFault is IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT: map
	// the pages already present, fault none in.
	AdvicePrefetchNoFault MRAdvice = 2
)

// AdviseFlags is enum ibv_advise_mr_flags.
type AdviseFlags uint32

// AdviseFlush is IBV_ADVISE_MR_FLAG_FLUSH: AdviseMR returns once the advice
// was carried out, not when it was queued.
const AdviseFlush AdviseFlags = 1

// AdviseMR is ibv_advise_mr (UVERBS_METHOD_ADVISE_MR): it tells the device
// to prefetch the pages of the ranges in sgl, each inside an MR of the PD
// registered with AccessOnDemand, so that the first access by the device or
// a peer does not wait for a page fault. Without AdviseFlush the kernel
// queues the work and returns at once. A device or kernel without the
// method (rxe before its ODP, newer than Linux 6.12) fails with
// ErrNotSupported naming the kernel.
func (pd *PD) AdviseMR(advice MRAdvice, flags AdviseFlags, sgl []SGE) error {
	if len(sgl) == 0 {
		return fmt.Errorf("advise mr: no ranges: give at least one SGE (MR.SGE): %w", syscall.EINVAL)
	}
	if advice > AdvicePrefetchNoFault {
		return fmt.Errorf("advise mr: advice %d: want AdvicePrefetch, AdvicePrefetchWrite or AdvicePrefetchNoFault: %w", advice, syscall.EINVAL)
	}
	if flags&^AdviseFlush != 0 {
		return fmt.Errorf("advise mr: flags %#x: only AdviseFlush is defined: %w", uint32(flags), syscall.EINVAL)
	}
	if err := pd.rlockOpen("advise mr: pd"); err != nil {
		return err
	}
	defer pd.mu.RUnlock()
	list := make([]abi.SGE, len(sgl))
	for i, s := range sgl {
		list[i] = abi.SGE{Addr: s.Addr, Length: s.Length, LKey: s.LKey}
	}
	var pin runtime.Pinner
	pin.Pin(&list[0])
	defer pin.Unpin()
	var fl [4]byte
	binary.NativeEndian.PutUint32(fl[:], uint32(flags))
	attrs := []abi.IoctlAttr{
		abi.AttrIDR(abi.UVERBS_ATTR_ADVISE_MR_PD_HANDLE, pd.handle),
		abi.AttrConstIn(abi.UVERBS_ATTR_ADVISE_MR_ADVICE, uint64(advice)),
		abi.AttrInline(abi.UVERBS_ATTR_ADVISE_MR_FLAGS, fl[:]),
		abi.AttrPtr(abi.UVERBS_ATTR_ADVISE_MR_SGE_LIST, abi.PtrU64(unsafe.Pointer(&list[0])), len(list)*int(unsafe.Sizeof(list[0]))),
	}
	err := pd.ctx.ioctl(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_ADVISE_MR, attrs)
	runtime.KeepAlive(list)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EOPNOTSUPP) || noIoctl(err):
		return fmt.Errorf("advise mr: %s on %s has no advise_mr (rxe has it with its on-demand paging, newer than Linux 6.12): %w: %w", pd.ctx.dev.Name, kernelName(), ErrNotSupported, err)
	}
	return fmt.Errorf("advise mr of %d ranges: %w", len(sgl), err)
}
