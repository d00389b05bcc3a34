// Copyright 2026 The rdmago Authors.

// Package lab is the Soft-RoCE lab: it fetches Debian's 6.1 and 6.12
// kernels (GetKernel), builds an initramfs with a Go /init and the RDMA
// modules (Initramfs), and boots one node, or two joined by a virtual wire,
// in QEMU with an rxe device up in each.
//
// Its API is small: Start boots and returns a Lab whose Run runs one step
// per node (Close it); RunCommand is `rdmalab run` and RunTests is
// `rdmalab test` on top of it. A caller that boots the lab itself, as
// tools/bench does, gets the writable host directories from Shares and
// checks paths against the guests' own /tmp with UnderTmp.
package lab
