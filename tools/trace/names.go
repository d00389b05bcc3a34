// Copyright 2026 The rdmago Authors.

package trace

import (
	"fmt"

	"github.com/rdmago/rdmago/internal/abi"
)

// Names turns the numbers the kernel sees into the names of the UAPI headers.
// The tracer and the formatters take one; ABINames is the real one, built from
// package abi. Every method returns "" for a number it does not know; the
// formatter then prints the number.
type Names interface {
	// VerbsCommand names a write() command of ib_user_verbs.h
	// (IB_USER_VERBS_CMD_x -> "x"), cmd without the extended flag.
	VerbsCommand(cmd uint32) string
	// VerbsExCommand names an extended write() command
	// (IB_USER_VERBS_EX_CMD_x -> "x"), cmd without the extended flag.
	VerbsExCommand(cmd uint32) string
	// IoctlObject names a UVERBS_OBJECT_x of ib_user_ioctl_cmds.h ("x").
	IoctlObject(obj uint16) string
	// IoctlMethod names method of object obj ("CREATE" for UVERBS_METHOD_CQ_CREATE).
	IoctlMethod(obj, method uint16) string
	// UCMCommand names an RDMA_USER_CM_CMD_x of rdma_user_cm.h ("x").
	UCMCommand(cmd uint32) string
	// CMEvent names an RDMA_CM_EVENT_x ("x").
	CMEvent(ev uint32) string
}

func orNumber(name, prefix string, v uint64) string {
	if name != "" {
		return name
	}
	return fmt.Sprintf("%s%#x", prefix, v)
}

// verbsWriteName names the command word of an ib_uverbs_cmd_hdr.
func verbsWriteName(n Names, command uint32) string {
	cmd := command & abi.IB_USER_VERBS_CMD_COMMAND_MASK
	if command&abi.IB_USER_VERBS_CMD_FLAG_EXTENDED != 0 {
		return orNumber(n.VerbsExCommand(cmd), "EX_CMD_", uint64(cmd))
	}
	return orNumber(n.VerbsCommand(cmd), "CMD_", uint64(cmd))
}

// ioctlName names an ioctl object and method as "OBJECT.METHOD".
func ioctlName(n Names, obj, method uint16) string {
	return orNumber(n.IoctlObject(obj), "OBJ_", uint64(obj)) + "." +
		orNumber(n.IoctlMethod(obj, method), "METHOD_", uint64(method))
}
