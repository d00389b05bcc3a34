// Copyright 2026 The rdmago Authors.

//go:build !(mips || mipsle || mips64 || mips64le || ppc || ppc64 || ppc64le || sparc || sparc64)

package abi

// The direction bits of include/uapi/asm-generic/ioctl.h.
const (
	_IOC_DIRSHIFT   = 30
	_IOC_READ_WRITE = 2 | 1 // _IOC_READ | _IOC_WRITE
)
