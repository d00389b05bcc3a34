// Copyright 2026 The rdmago Authors.

//go:build linux

// Command guestinit is the lab guest's /init (see package guest). rdmalab
// builds it with CGO_ENABLED=0 and puts it into the initramfs; it is not meant
// to be run anywhere else.
package main

import (
	"fmt"
	"os"

	"github.com/rdmago/rdmago/tools/lab/guest"
)

func main() {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "guestinit is the rdmalab guest's /init; run `rdmalab run` instead")
		os.Exit(2)
	}
	guest.Main()
}
