// Copyright 2026 The rdmago Authors.

#include "textflag.h"

// func ticks() int64
//
// RDTSC, as perftest's get_cycles on x86: no serialisation, no system call.
TEXT ·ticks(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET
