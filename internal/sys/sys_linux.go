// Copyright 2026 The rdmago Authors.

// Package sys holds every raw system call the library makes (uverbs, cm and
// the netlink clients): thin wrappers over golang.org/x/sys/unix, so the verbs
// and CM code reads as verbs and CM, and every place that enters the kernel is
// in one file. None of them allocates on success, and errors are bare
// syscall.Errno values for the caller to wrap with the operation.
package sys

import (
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Supported says whether this system has the kernel interfaces rdmago
// speaks: always on Linux (whether RDMA is loaded is another matter); an
// error matching ErrNotSupported elsewhere (sys_other.go).
func Supported() error { return nil }

// Open opens a character device read-write, close-on-exec.
func Open(path string) (int, error) { return unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0) }

// OpenNonblock opens a character device read-write, close-on-exec and
// non-blocking, ready for os.NewFile to put it on the netpoller: how the
// rdma_cm device is opened.
func OpenNonblock(path string) (int, error) {
	return unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
}

// Close closes fd.
func Close(fd int) error { return unix.Close(fd) }

// Write is write(2); the uverbs command interface.
func Write(fd int, b []byte) (int, error) { return unix.Write(fd, b) }

// RawWrite is write(2) made without telling the Go scheduler (RawSyscall):
// the rxe doorbell, on the data path. A write through the scheduler's
// syscall entry marks the goroutine's P as in a system call; when the call
// outlasts one sysmon tick (20 µs, easily reached when rxe runs its
// requester inside the write, as 6.1 does) and no other P is idle — always
// so with GOMAXPROCS=1 — sysmon hands the P to another thread, and the
// write returns to a thread without one: futex wake-ups, a trip through the
// scheduler, and a sysmon that never backs off its 20 µs period. The
// doorbell never blocks (the kernel runs or schedules the send queue and
// returns), which is the condition for a raw system call; the cost is that
// this thread's P runs nothing else for the length of the write, as with
// a C program's doorbell.
func RawWrite(fd int, b []byte) (int, error) {
	if raceEnabled {
		return unix.Write(fd, b)
	}
	return rawRW(unix.SYS_WRITE, fd, b)
}

// rawRW is read(2) or write(2) (trap) as a raw system call.
func rawRW(trap uintptr, fd int, b []byte) (int, error) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	n, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(p), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// RawRead is read(2) made without telling the Go scheduler (RawSyscall),
// for descriptors that never block (O_NONBLOCK): the event records of
// completion channels and async event fds, read once before a goroutine
// parks on the netpoller and once after it wakes. Through the scheduler's
// system call entry each such read wakes sysmon whenever every P had gone
// idle (as all do while a ping-pong waits for its peer), and a woken
// sysmon goes back to its 20 µs period: a futex wake-up, nanosleeps and
// clock reads per message on machines where those are not cheap (see
// RawWrite for the hand-off of the P it also risks).
//
// Under the race detector both go through x/sys/unix's Read and Write
// (raceEnabled): their annotations, a release before each write and an
// acquire after each read, are how the detector learns that what one
// goroutine wrote before a write(2) is seen by the goroutine whose read(2)
// followed it. Host tests play the kernel with goroutines (a fake CQ's
// producer answers the arm's command with a completion and an event);
// raw calls would hide that ordering from the detector.
func RawRead(fd int, b []byte) (int, error) {
	if raceEnabled {
		return unix.Read(fd, b)
	}
	return rawRW(unix.SYS_READ, fd, b)
}

// Ioctl is ioctl(2) with a pointer argument (RDMA_VERBS_IOCTL). arg must point
// to memory that stays valid and in place for the call.
func Ioctl(fd int, req uint32, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// MmapShared maps size bytes of fd at offset read-write and shared: how the
// rxe queues are mapped (offset is the kernel's mmap cookie).
func MmapShared(fd int, offset int64, size int) ([]byte, error) {
	return unix.Mmap(fd, offset, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// MmapAnon maps size bytes of zeroed private anonymous memory.
func MmapAnon(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}

// Munmap unmaps a mapping made by MmapShared or MmapAnon (the whole slice).
func Munmap(b []byte) error { return unix.Munmap(b) }

// PrepareEventFD makes an event fd non-blocking and close-on-exec, ready for
// os.NewFile to put it on the netpoller.
func PrepareEventFD(fd int) error {
	if err := unix.SetNonblock(fd, true); err != nil {
		return err
	}
	unix.CloseOnExec(fd)
	return nil
}

// MemlockLimit is the soft RLIMIT_MEMLOCK in bytes; unlimited reports
// RLIM_INFINITY.
func MemlockLimit() (cur uint64, unlimited bool, err error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		return 0, false, err
	}
	return lim.Cur, lim.Cur == unix.RLIM_INFINITY, nil
}

// NetlinkSocket is socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, proto): a
// blocking netlink socket of protocol proto (NETLINK_ROUTE, NETLINK_RDMA).
func NetlinkSocket(proto int) (int, error) {
	return unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
}

// NetlinkBind binds a netlink socket to a port id the kernel picks.
func NetlinkBind(fd int) error {
	return unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// NetlinkPortID is getsockname(2) of a bound netlink socket: the port id the
// kernel gave it (nl_pid), 0 when the address is not a netlink one.
func NetlinkPortID(fd int) (uint32, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, err
	}
	if nl, ok := sa.(*unix.SockaddrNetlink); ok {
		return nl.Pid, nil
	}
	return 0, nil
}

// NetlinkExtAck asks for extended acks (error text, NETLINK_EXT_ACK) and for
// acks without the request echoed back (NETLINK_CAP_ACK). Best effort: older
// kernels lack these options, and the socket works without them.
func NetlinkExtAck(fd int) {
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
}

// NetlinkSend is sendto(2) of one request to the kernel (port id 0).
func NetlinkSend(fd int, b []byte) error {
	return unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// NetlinkRecv is recvfrom(2) of one datagram into b.
func NetlinkRecv(fd int, b []byte) (int, error) {
	n, _, err := unix.Recvfrom(fd, b, 0)
	return n, err
}

// RenameNoReplace is renameat2(2) with RENAME_NOREPLACE, both names relative
// to the directory dirfd: it fails with EEXIST instead of replacing an
// existing to (Linux 3.15; EINVAL where the file system cannot).
func RenameNoReplace(dirfd int, from, to string) error {
	return unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
}

// Umask returns the process's file mode creation mask, read from
// /proc/self/status (Linux 4.7) without changing it; where that line is
// missing, umask(2) is set and restored, which races with files created
// meanwhile by other goroutines.
func Umask() (int, error) {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return int(m), nil
				}
			}
		}
	}
	m := unix.Umask(0o022)
	unix.Umask(m)
	return m, nil
}
