// Copyright 2026 The rdmago Authors.

package trace

import "syscall"

// kernelErrnoNames are the kernel-internal error numbers (include/linux/errno.h)
// a probe can see returned by a kernel function, though a process never
// does: a system call interrupted by a signal returns ERESTARTSYS and
// friends, which the kernel turns into EINTR or a restart on the way out.
var kernelErrnoNames = map[syscall.Errno]string{
	512: "ERESTARTSYS",
	513: "ERESTARTNOINTR",
	514: "ERESTARTNOHAND",
	515: "ENOIOCTLCMD",
	516: "ERESTART_RESTARTBLOCK",
	517: "EPROBE_DEFER",
	518: "EOPENSTALE",
	519: "ENOPARAM",
	521: "EBADHANDLE",
	522: "ENOTSYNC",
	523: "EBADCOOKIE",
	524: "ENOTSUPP",
	525: "ETOOSMALL",
	526: "ESERVERFAULT",
	527: "EBADTYPE",
	528: "EJUKEBOX",
	529: "EIOCBQUEUED",
	530: "ERECALLCONFLICT",
	531: "ENOGRACE",
}

// errnoNote explains a return value in the line after its number: the
// restart codes mean the call was interrupted by a signal.
func errnoNote(ret int64) string {
	switch ret {
	case -512:
		return ", interrupted by a signal: EINTR, or restarted under SA_RESTART"
	case -513:
		return ", interrupted by a signal: restarted"
	case -514:
		return ", interrupted by a signal: EINTR if handled, else restarted"
	case -516:
		return ", interrupted by a signal: restarted by restart_syscall"
	}
	return ""
}
