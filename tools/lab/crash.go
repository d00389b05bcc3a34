// Copyright 2026 The rdmago Authors.

package lab

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmago/rdmago/transfer"
)

// Crash is a guest kernel crash (an oops, a BUG() or a panic) as the
// guest's console told it. When a node's kernel crashes the lab stops every
// node at once, and the Lab's methods return an error that errors.As finds
// a *Crash in: the guest's kernel failed, not the test that was running.
// Every string in it is escaped console text, fit to print.
type Crash struct {
	Node   int
	Kernel string        // release from the oops' CPU: line (or the guest's uname -r)
	Uptime time.Duration // since the guest's boot, from the console's timestamp; 0 unknown
	// Module is the first module in the call trace (rdma_rxe, ib_core),
	// or "" when every reliable frame is in the core kernel.
	Module string
	// Lines are the key lines: what happened (BUG:, general protection
	// fault, kernel BUG at), the oops header, the CPU: line, the first RIP:
	// line and the panic line, each once, in console order.
	Lines []string
	// Trace is the call trace, innermost frame first, without the frames
	// the kernel marks unreliable ("?"): "func" or "func [module]".
	Trace []string
}

// Where says where the kernel crashed: "in rdma_rxe", "in the core kernel".
func (c *Crash) Where() string {
	if c.Module != "" {
		return "in " + c.Module
	}
	return "in the core kernel"
}

func (c *Crash) Error() string {
	head := ""
	if len(c.Lines) > 0 {
		head = ": " + c.Lines[0]
	}
	return fmt.Sprintf("node %d: the guest kernel crashed %s%s", c.Node, c.Where(), head)
}

// Report is the crash's diagnosis, several lines, each starting with
// prefix: which node, that the kernel crashed (not a test), the kernel
// release, the oops' key lines and its call trace.
func (c *Crash) Report(prefix string) string {
	var b strings.Builder
	up := ""
	if c.Uptime > 0 {
		up = fmt.Sprintf(", %.1fs after boot", c.Uptime.Seconds())
	}
	fmt.Fprintf(&b, "%snode %d: the guest's kernel crashed %s%s: a kernel bug, not a test failure\n", prefix, c.Node, c.Where(), up)
	if c.Kernel != "" {
		fmt.Fprintf(&b, "%s  kernel: %s\n", prefix, c.Kernel)
	}
	for _, l := range c.Lines {
		fmt.Fprintf(&b, "%s  %s\n", prefix, l)
	}
	if len(c.Trace) > 0 {
		fmt.Fprintf(&b, "%s  call trace, innermost first: %s\n", prefix, strings.Join(c.Trace, " < "))
	}
	return b.String()
}

// What the kernel prints when it crashes (arch/x86/kernel/dumpstack.c,
// kernel/panic.c, mm/fault.c).
var (
	// The kernel's console timestamp, "[   29.123456] ".
	consoleStamp = regexp.MustCompile(`^\[\s*(\d+)\.(\d{6})\]\s?`)
	// The oops header __die_header prints: "Oops: 0000 [#1] PREEMPT SMP NOPTI",
	// "general protection fault, probably for ...: 0000 [#1] SMP",
	// "invalid opcode: 0000 [#1] ..." (6.12 starts each with "Oops: ").
	oopsHeader = regexp.MustCompile(`: [0-9a-f]{4} \[#\d+\]`)
	// Lines that start a crash report, a few lines before its header.
	crashStart = regexp.MustCompile(`^(BUG: |general protection fault|kernel BUG at |Oops: |Unable to handle kernel)`)
	panicLine  = regexp.MustCompile(`^Kernel panic - not syncing: `)
	endPanic   = regexp.MustCompile(`^---\[ end Kernel panic`)
	endTrace   = regexp.MustCompile(`^---\[ end trace `)
	// "CPU: 0 UID: 0 PID: 0 Comm: swapper/0 Tainted: G   D  6.12.48+deb13-amd64 #1 ...".
	cpuLine = regexp.MustCompile(`^CPU: \d+ .*(?:Not tainted|Tainted: [^0-9]*)\s*(\d+\.\d+\S*)`)
	// A call trace frame: " ? __die+0x23/0x70", " rxe_receiver+0x1a2/0x2e0 [rdma_rxe]".
	traceFrame = regexp.MustCompile(`^\s*(\?\s+)?([A-Za-z0-9_.$]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?:\s+\[([A-Za-z0-9_]+)\])?`)
	ripLine    = regexp.MustCompile(`^RIP: [0-9a-f]{4}:([A-Za-z0-9_.$]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?:\s+\[([A-Za-z0-9_]+)\])?`)
)

// crashWatch reads a guest's console as it arrives and recognises a kernel
// crash in it: an oops header or a panic line makes it fatal (a "BUG: soft
// lockup" or a WARNING alone does not); the crash is complete at the end of
// the panic ("---[ end Kernel panic"; the stack of a panic without an oops
// comes after its first line), when the console has been quiet for settle
// after the oops, or when the guest's process exits (finish: with panic=-1
// and -no-reboot, qemu exits as the guest panics). onCrash then runs once,
// with the crash parsed from the console's last lines.
type crashWatch struct {
	node    int
	settle  time.Duration // quiet time after an oops without a panic (default 2s)
	onCrash func(*Crash)

	mu      sync.Mutex
	partial []byte
	lines   []string // the last maxWatchLines lines, timestamps kept
	fatal   int      // index in lines of the header or panic line; -1 none
	done    bool
	timer   *time.Timer
	crash   *Crash
}

const maxWatchLines = 400

func newCrashWatch(node int, onCrash func(*Crash)) *crashWatch {
	return &crashWatch{node: node, onCrash: onCrash, fatal: -1, settle: 2 * time.Second}
}

func (w *crashWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	var fire *Crash
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(w.partial[:i]), "\r")
		w.partial = w.partial[i+1:]
		if c := w.line(line); c != nil && fire == nil {
			fire = c
		}
	}
	if len(w.partial) > 4096 { // a line without end: keep its start
		w.partial = w.partial[:4096]
	}
	w.mu.Unlock()
	if fire != nil && w.onCrash != nil {
		w.onCrash(fire)
	}
	return len(p), nil
}

// line takes one console line; it returns the crash when this line
// completes one. w.mu is held.
func (w *crashWatch) line(raw string) *Crash {
	if w.done {
		return nil
	}
	if len(w.lines) == maxWatchLines {
		drop := maxWatchLines / 4
		if w.fatal >= 0 && w.fatal < drop {
			drop = w.fatal // keep an oops that is still being printed
		}
		w.lines = append(w.lines[:0], w.lines[drop:]...)
		if w.fatal >= 0 {
			w.fatal -= drop
		}
	}
	w.lines = append(w.lines, raw)
	text := consoleStamp.ReplaceAllString(raw, "")
	if w.fatal < 0 && (panicLine.MatchString(text) || oopsHeader.MatchString(text) || strings.HasPrefix(text, "kernel BUG at ")) {
		w.fatal = len(w.lines) - 1
	}
	if w.fatal < 0 {
		return nil
	}
	if endPanic.MatchString(text) {
		return w.complete()
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(w.settle, w.settled)
	} else {
		w.timer.Reset(w.settle)
	}
	return nil
}

func (w *crashWatch) settled() {
	w.mu.Lock()
	c := w.complete()
	w.mu.Unlock()
	if c != nil && w.onCrash != nil {
		w.onCrash(c)
	}
}

// finish ends the console (the guest's process exited): a crash still being
// printed is complete. It returns the crash, if there was one.
func (w *crashWatch) finish() *Crash {
	w.mu.Lock()
	if len(w.partial) > 0 && !w.done {
		w.lines = append(w.lines, string(w.partial))
		w.partial = nil
	}
	c := w.complete()
	crash := w.crash
	w.mu.Unlock()
	if c != nil && w.onCrash != nil {
		w.onCrash(c)
	}
	return crash
}

// complete parses the crash once it is fatal; it returns it the first time
// only. w.mu is held.
func (w *crashWatch) complete() *Crash {
	if w.done || w.fatal < 0 {
		return nil
	}
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.crash = parseCrash(w.node, w.lines, w.fatal)
	return w.crash
}

// Crash returns the crash the console showed, or nil.
func (w *crashWatch) Crash() *Crash {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.crash
}

// parseCrash reads the crash whose header (or panic line) is lines[fatal].
func parseCrash(node int, lines []string, fatal int) *Crash {
	c := &Crash{Node: node}
	text := make([]string, len(lines))
	for i, l := range lines {
		text[i] = consoleStamp.ReplaceAllString(l, "")
	}
	if m := consoleStamp.FindStringSubmatch(lines[fatal]); m != nil {
		s, _ := strconv.Atoi(m[1])
		us, _ := strconv.Atoi(m[2])
		c.Uptime = time.Duration(s)*time.Second + time.Duration(us)*time.Microsecond
	}
	// The report starts a few lines before its header: "BUG: unable to
	// handle page fault", then #PF: and PGD lines, then "Oops: 0000 [#1]".
	start := fatal
	for i := fatal; i >= 0 && i >= fatal-8; i-- {
		if crashStart.MatchString(text[i]) {
			start = i
		}
	}
	seen := map[string]bool{}
	add := func(s string) {
		s = transfer.Escape(strings.TrimSpace(s))
		if s != "" && !seen[s] {
			seen[s] = true
			c.Lines = append(c.Lines, s)
		}
	}
	add(text[start])
	inTrace, traced, rip := false, false, false
	var ripModule string
	var all []string // every frame, "?" ones too, for a trace that has only those
	var firstModule, anyModule string
	for _, t := range text[start:] {
		switch {
		case oopsHeader.MatchString(t), strings.HasPrefix(t, "kernel BUG at "):
			add(t)
		case cpuLine.MatchString(t):
			if c.Kernel == "" {
				c.Kernel = transfer.Escape(cpuLine.FindStringSubmatch(t)[1])
				add(t)
			}
		case ripLine.MatchString(t):
			if !rip {
				rip = true
				ripModule = ripLine.FindStringSubmatch(t)[2]
				add(t)
			}
		case panicLine.MatchString(t):
			add(t)
		case strings.HasPrefix(t, "Call Trace:"):
			inTrace = !traced
			traced = true
			continue
		}
		if !inTrace {
			continue
		}
		if endTrace.MatchString(t) || strings.HasPrefix(t, "Modules linked in:") || panicLine.MatchString(t) {
			inTrace = false
			continue
		}
		m := traceFrame.FindStringSubmatch(t)
		if m == nil {
			continue // <IRQ>, </TASK>, the registers of an interrupted context
		}
		f := transfer.Escape(m[2])
		if m[3] != "" {
			f += " [" + transfer.Escape(m[3]) + "]"
			if anyModule == "" {
				anyModule = m[3]
			}
		}
		all = append(all, f)
		if m[1] != "" {
			continue // the kernel is not sure this frame is live
		}
		if m[3] != "" && firstModule == "" {
			firstModule = m[3]
		}
		c.Trace = append(c.Trace, f)
	}
	if len(c.Trace) == 0 {
		c.Trace = all
		firstModule = anyModule
	}
	const maxFrames = 16
	if len(c.Trace) > maxFrames {
		c.Trace = append(c.Trace[:maxFrames:maxFrames], "...")
	}
	c.Module = transfer.Escape(ripModule)
	if c.Module == "" {
		c.Module = transfer.Escape(firstModule)
	}
	return c
}
