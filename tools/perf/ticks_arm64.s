// Copyright 2026 The rdmago Authors.

#include "textflag.h"

// func ticks() int64
//
// The virtual counter CNTVCT_EL0, as perftest's get_cycles on aarch64.
TEXT ·ticks(SB), NOSPLIT, $0-8
	MRS	CNTVCT_EL0, R0
	MOVD	R0, ret+0(FP)
	RET
