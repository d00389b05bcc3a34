// Copyright 2026 The rdmago Authors.

//go:build !linux

package sys

import (
	"fmt"
	"runtime"
	"unsafe"
)

// RDMA through uverbs and rdma_cm is a Linux kernel interface. Elsewhere the
// library builds, and every call that would enter the kernel fails with
// this error, which matches ErrNotSupported.
var errNotLinux = fmt.Errorf("rdmago needs Linux's RDMA interfaces (uverbs, rdma_cm, RDMA netlink), and this is %s: %w", runtime.GOOS, ErrNotSupported)

// Supported says whether this system has the kernel interfaces: an error
// matching ErrNotSupported off Linux.
func Supported() error { return errNotLinux }

func Open(string) (int, error)                   { return -1, errNotLinux }
func OpenNonblock(string) (int, error)           { return -1, errNotLinux }
func Close(int) error                            { return errNotLinux }
func Write(int, []byte) (int, error)             { return 0, errNotLinux }
func RawWrite(int, []byte) (int, error)          { return 0, errNotLinux }
func RawRead(int, []byte) (int, error)           { return 0, errNotLinux }
func Ioctl(int, uint32, unsafe.Pointer) error    { return errNotLinux }
func MmapShared(int, int64, int) ([]byte, error) { return nil, errNotLinux }
func MmapAnon(int) ([]byte, error)               { return nil, errNotLinux }
func Munmap([]byte) error                        { return errNotLinux }
func PrepareEventFD(int) error                   { return errNotLinux }
func MemlockLimit() (uint64, bool, error)        { return 0, false, errNotLinux }
func NetlinkSocket(int) (int, error)             { return -1, errNotLinux }
func NetlinkBind(int) error                      { return errNotLinux }
func NetlinkPortID(int) (uint32, error)          { return 0, errNotLinux }
func NetlinkExtAck(int)                          {}
func NetlinkSend(int, []byte) error              { return errNotLinux }
func NetlinkRecv(int, []byte) (int, error)       { return 0, errNotLinux }
func RenameNoReplace(int, string, string) error  { return errNotLinux }
func Umask() (int, error)                        { return 0o022, errNotLinux }
