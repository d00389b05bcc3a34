// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmago/rdmago/internal/abi"
)

// TestRegMROnDemandRefused: without the device's ODP report, RegMR with
// AccessOnDemand fails with ErrNotSupported naming the kernel and the
// missing capability, and sends the kernel nothing.
func TestRegMROnDemandRefused(t *testing.T) {
	c, r := testContext(t)
	pd := &PD{ctx: c, handle: 1}
	for _, tt := range []struct {
		name    string
		general uint64
		rc      uint32
		access  AccessFlags
		want    []string
	}{
		{"no ODP", 0, 0, AccessLocalWrite, []string{"IB_UVERBS_ODP_SUPPORT", kernelName(), "fake0"}},
		{"no RC READ or ATOMIC", abi.IB_UVERBS_ODP_SUPPORT, abi.IB_UVERBS_ODP_SUPPORT_SEND | abi.IB_UVERBS_ODP_SUPPORT_WRITE,
			AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic,
			[]string{"IB_UVERBS_ODP_SUPPORT_READ, IB_UVERBS_ODP_SUPPORT_ATOMIC", kernelName()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c.odpGeneral, c.odpRC = tt.general, tt.rc
			_, err := pd.RegMR(make([]byte, 4096), tt.access|AccessOnDemand)
			if !errors.Is(err, ErrNotSupported) {
				t.Fatalf("got %v, want ErrNotSupported", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if _, err := unix.Read(r, make([]byte, 64)); !errors.Is(err, unix.EAGAIN) {
				t.Errorf("a command was written (read: %v)", err)
			}
		})
	}
}

// TestAdviseMRInput: AdviseMR refuses what ibv_advise_mr would, before any
// system call, and maps a descriptor without the ioctl interface to
// ErrNotSupported.
func TestAdviseMRInput(t *testing.T) {
	c, _ := testContext(t)
	pd := &PD{ctx: c, handle: 1}
	sge := []SGE{{Addr: 0x1000, Length: 4096, LKey: 1}}
	for _, tt := range []struct {
		name   string
		advice MRAdvice
		flags  AdviseFlags
		sgl    []SGE
	}{
		{"no ranges", AdvicePrefetch, 0, nil},
		{"unknown advice", AdvicePrefetchNoFault + 1, 0, sge},
		{"unknown flag", AdvicePrefetch, AdviseFlush << 1, sge},
	} {
		if err := pd.AdviseMR(tt.advice, tt.flags, tt.sgl); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: got %v, want EINVAL", tt.name, err)
		}
	}
	// The pipe has no RDMA_VERBS_IOCTL: ENOTTY, as a kernel without it.
	if err := pd.AdviseMR(AdvicePrefetchWrite, AdviseFlush, sge); !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), kernelName()) {
		t.Errorf("got %v, want ErrNotSupported naming %s", err, kernelName())
	}
}
