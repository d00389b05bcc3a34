// Copyright 2026 The rdmago Authors.

// Package guest is the lab guest's /init: a static Go program that mounts the
// kernel file systems, loads the RDMA modules, brings up the network with
// rtnetlink, creates the rxe device with RDMA netlink, mounts the host's root
// over 9p and then runs the host's commands one at a time, talking to the host
// over ttyS1 (package labproto). It powers the machine off when done.
package guest

// ModuleDir is where the initramfs keeps the modules; ModuleOrder lists
// their file names in load order, one a line.
const (
	ModuleDir   = "/lib/modules/rdmalab"
	ModuleOrder = ModuleDir + "/order"
	HostRoot    = "/host"
	CtlPort     = "/dev/ttyS1"
)
