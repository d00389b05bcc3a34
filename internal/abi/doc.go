// Copyright 2026 The rdmago Authors.

// Package abi is a hand-written Go port of the Linux RDMA user-space ABI: the
// UAPI headers that /dev/infiniband/uverbs*, /dev/infiniband/rdma_cm and the
// RDMA netlink family speak. It holds data and encoding only: constants,
// structs with the kernel's exact layout, and functions that build and parse
// the byte buffers of commands and responses. It opens no files and makes no
// system calls; packages uverbs and cm do that on top of it.
//
// # Sources
//
// One Go file ports one header and is named after it (other files hold
// encoding helpers):
//
//	ib_user_verbs.go        include/uapi/rdma/ib_user_verbs.h
//	ib_user_ioctl_cmds.go   include/uapi/rdma/ib_user_ioctl_cmds.h
//	ib_user_ioctl_verbs.go  include/uapi/rdma/ib_user_ioctl_verbs.h
//	rdma_user_ioctl_cmds.go include/uapi/rdma/rdma_user_ioctl_cmds.h
//	rdma_user_rxe.go        include/uapi/rdma/rdma_user_rxe.h
//	rdma_user_cm.go         include/uapi/rdma/rdma_user_cm.h (and the parts of ib_user_sa.h it uses)
//	rdma_netlink.go         include/uapi/rdma/rdma_netlink.h
//
// The verbs, ioctl and rxe files were ported from rdma-core's copy of the
// kernel headers (kernel-headers/, commit 691953d of 2026-08) and checked
// against the headers Debian 12 installs (rdma-core v44, the UAPI of Linux
// 6.1); rdma_user_cm.go and rdma_netlink.go were ported from those installed
// v44 headers, rdma_user_cm.go with the later additions up to 691953d. The
// rdma_cm ABI is version 4. Whatever is newer than a lab kernel is marked
// with the kernel that first has it (or "newer than Linux 6.12"); an older
// kernel rejects such a command or ignores such a field. A lab test compares
// every struct with the BTF of the running kernel (Linux 6.1 and 6.12 in
// rdmago's lab).
//
// # Rules
//
// Structs use fixed-width integers only, start with a structs.HostLayout
// field, and write every byte of padding the C compiler would insert as a
// blank field (_ [N]byte), so that the Go and C layouts agree field by field.
// Each struct's doc comment names its C struct and header. Constants keep
// their C names (RDMA_USER_CM_CMD_CONNECT, IB_WC_SUCCESS); types get Go names
// (UCMConnect is struct rdma_ucm_connect).
//
// Field names follow one rule, on which the layout tests rely: a Go field's
// name, lower-cased with underscores removed, equals its C field's name
// lower-cased with underscores removed (qp_num → QPNum, wr_id → WrID). A C
// union is ported as its first member, or as a byte array named after the
// union, with typed accessors (UCMEventResp.Param and its ConnParam and
// UDParam methods).
//
// Sizes and offsets are those of 64-bit Linux. The C compiler lays every
// ported struct out the same way for i386 (the headers use __aligned_u64), and
// so does Go for GOARCH=386; the kernel has no compat layer for these ABIs, so
// a 32-bit process on a 64-bit kernel uses these very layouts.
// Multi-byte fields are in the host's byte order unless the C type is
// __be16/__be32/__be64, which are ported as byte arrays or documented as
// network order.
//
// Nothing in abi promises API stability: it follows the kernel headers.
package abi
