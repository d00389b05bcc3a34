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
//
// Each node's console is watched for a kernel crash (an oops or a panic):
// the first one stops every node at once, and the Lab's methods then fail
// with an error holding a *Crash (errors.As), the crash's diagnosis.
package lab
