// Copyright 2026 The rdmago Authors.

package lab

import (
	"fmt"
	"strings"
)

// baseCmdline is the guests' kernel command line before Options.Append:
// the console the crash watch reads, no boot chatter on it, and a panic
// that powers the guest off at once (QEMU runs with -no-reboot).
const baseCmdline = "console=ttyS0 quiet panic=-1"

// maxCmdline is x86-64's COMMAND_LINE_SIZE less its terminating NUL: the
// kernel cuts a longer command line short.
const maxCmdline = 2047

// TSCArgs boot the guest with the TSC as its clock source. Debian's kernels
// under QEMU TCG mark the TSC unstable at boot ("TSCs unsynchronized": the
// boot-time check between vCPUs fails under emulation) and fall back to the
// HPET, and with the HPET the vDSO cannot read the clock: every
// clock_gettime and gettimeofday is a real system call reading an emulated
// MMIO register (12,000-13,000 in one 4 s rdmaperf run, from Go's
// runtime; perftest's calibration spins on gettimeofday). TCG's TSC is
// QEMU's one tick counter, the same for every vCPU, so trusting it
// (tsc=reliable skips the sync check and the clocksource watchdog) is sound
// here. Measured (docs/performance.md): the clock reads
// become vDSO reads and perftest's "r^2 < 0.9" glitch much rarer, but
// rdmaperf/perftest ratios do not change beyond the noise.
var TSCArgs = []string{"clocksource=tsc", "tsc=reliable"}

// reservedParams are the parameters the lab itself needs: console (the
// crash watch and init's frames), panic (a crashed guest powers off),
// rdinit and init (the lab's own init runs the guest).
var reservedParams = []string{"console", "panic", "rdinit", "init"}

// ParseKernelArgs splits s, kernel parameters separated by spaces such as
// "clocksource=tsc tsc=reliable", into the form Options.Append takes, and
// checks them (see CheckKernelArgs). An empty s gives none.
func ParseKernelArgs(s string) ([]string, error) {
	args := strings.Fields(s)
	if len(args) == 0 {
		return nil, nil
	}
	if err := CheckKernelArgs(args); err != nil {
		return nil, err
	}
	return args, nil
}

// CheckKernelArgs checks the extra kernel parameters of Options.Append:
// each is NAME or NAME=VALUE, NAME made of letters, digits, '_', '-' and
// '.' (module.param), VALUE of printable ASCII without spaces or quotes;
// none may set a parameter the lab needs (console, panic, rdinit, init) or
// end the kernel's parameters ("--"); and the whole command line must fit
// the kernel's 2,048 bytes.
func CheckKernelArgs(args []string) error {
	n := len(baseCmdline)
	for _, a := range args {
		if err := checkKernelArg(a); err != nil {
			return fmt.Errorf("kernel parameter %q: %w", a, err)
		}
		n += 1 + len(a)
	}
	if n > maxCmdline {
		return fmt.Errorf("kernel command line of %d bytes: the kernel keeps only %d; pass fewer parameters", n, maxCmdline)
	}
	return nil
}

func checkKernelArg(a string) error {
	if a == "" {
		return fmt.Errorf("empty; want NAME or NAME=VALUE")
	}
	if a == "--" {
		return fmt.Errorf("would pass the rest of the command line to init, not the kernel")
	}
	name, value, _ := strings.Cut(a, "=")
	if name == "" {
		return fmt.Errorf("no name before '='; want NAME or NAME=VALUE")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("the name has %q; use letters, digits, '_', '-' or '.'", c)
		}
	}
	for _, c := range value {
		if c <= ' ' || c > '~' || c == '"' || c == '\'' {
			return fmt.Errorf("the value has %q; use printable ASCII without spaces or quotes", c)
		}
	}
	// The kernel treats '-' and '_' in a name alike.
	norm := strings.ReplaceAll(name, "-", "_")
	for _, r := range reservedParams {
		if norm == r {
			return fmt.Errorf("the lab sets %s itself and needs it", r)
		}
	}
	return nil
}

// kernelCmdline is the guests' kernel command line: the lab's own
// parameters, then extra (already checked).
func kernelCmdline(extra []string) string {
	if len(extra) == 0 {
		return baseCmdline
	}
	return baseCmdline + " " + strings.Join(extra, " ")
}
