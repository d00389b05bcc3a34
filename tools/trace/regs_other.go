// Copyright 2026 The rdmago Authors.

//go:build !amd64 && !arm64

package trace

// The kprobe programs read arguments from struct pt_regs, whose layout is
// per architecture; only amd64 and arm64 are described.
var regArgOffsets = []int16{}

const (
	regRetOffset  = 0
	regsSupported = false
)
