// Copyright 2026 The rdmago Authors.

package trace

// x86-64 struct pt_regs (arch/x86/include/asm/ptrace.h): the kprobe context.
// Arguments follow the SysV ABI: di, si, dx, cx, r8, r9; the return value is ax.
var regArgOffsets = []int16{112, 104, 96, 88, 72, 64}

const (
	regRetOffset  = 80
	regsSupported = true
)
