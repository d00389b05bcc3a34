// Copyright 2026 The rdmago Authors.

//go:build mips || mipsle || mips64 || mips64le || ppc || ppc64 || ppc64le || sparc || sparc64

package abi

// The direction bits of arch/{mips,powerpc,sparc}/include/uapi/asm/ioctl.h:
// 13 size bits, _IOC_READ 2, _IOC_WRITE 4.
const (
	_IOC_DIRSHIFT   = 29
	_IOC_READ_WRITE = 2 | 4
)
