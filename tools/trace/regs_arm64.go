// Copyright 2026 The rdmago Authors.

package trace

// arm64 struct pt_regs starts with struct user_pt_regs { u64 regs[31]; ... }
// (arch/arm64/include/asm/ptrace.h): arguments in x0..x7, return value in x0.
var regArgOffsets = []int16{0, 8, 16, 24, 32, 40, 48, 56}

const (
	regRetOffset  = 0
	regsSupported = true
)
