// Copyright 2026 The rdmago Authors.

//go:build !linux

package lab

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/rdmago/rdmago/internal/sys"
)

var errHost = fmt.Errorf("the lab needs a Linux host (it runs apt and QEMU, and uses flock and PR_SET_PDEATHSIG), and this is %s: %w", runtime.GOOS, sys.ErrNotSupported)

// hostErr says why this host cannot run the lab: off Linux an error
// matching uverbs.ErrNotSupported.
func hostErr() error { return errHost }

func qemuProcAttr() *syscall.SysProcAttr { return nil }

func lockFile(string) (*os.File, error) { return nil, errHost }

func wirePair() (a, b *os.File, err error) { return nil, nil, errHost }
