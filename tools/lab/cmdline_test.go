// Copyright 2026 The rdmago Authors.

package lab

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// appendArg is the value of -append in args ("" when there is none).
func appendArg(t *testing.T, args []string) string {
	t.Helper()
	var v []string
	for i, a := range args {
		if a == "-append" && i+1 < len(args) {
			v = append(v, args[i+1])
		}
	}
	if len(v) != 1 {
		t.Fatalf("want one -append in %q, got %d", args, len(v))
	}
	return v[0]
}

func TestQemuArgsAppend(t *testing.T) {
	for _, tc := range []struct {
		name   string
		append []string
		want   string
	}{
		{"default", nil, "console=ttyS0 quiet panic=-1"},
		{"tsc", TSCArgs, "console=ttyS0 quiet panic=-1 clocksource=tsc tsc=reliable"},
		{"one", []string{"nokaslr"}, "console=ttyS0 quiet panic=-1 nokaslr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for nodes := 1; nodes <= 2; nodes++ {
				l := &Lab{opts: Options{Nodes: nodes, MemoryMB: 1024, Append: tc.append}, Kernel: &Kernel{Vmlinuz: "/k/vmlinuz"}, tmp: "/t"}
				for i := 0; i < nodes; i++ {
					args := l.qemuArgs(i, "/k/initrd", "tcg", nil)
					if got := appendArg(t, args); got != tc.want {
						t.Errorf("%d node(s), node %d: -append %q, want %q", nodes, i, got, tc.want)
					}
				}
			}
		})
	}
}

func TestParseKernelArgs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"clocksource=tsc tsc=reliable", []string{"clocksource=tsc", "tsc=reliable"}},
		{" nokaslr\tmitigations=off ", []string{"nokaslr", "mitigations=off"}},
		{"rdma_rxe.debug=1 trace_event=sched:sched_switch,irq:*", []string{"rdma_rxe.debug=1", "trace_event=sched:sched_switch,irq:*"}},
		{"clock-source=tsc", []string{"clock-source=tsc"}},
	} {
		got, err := ParseKernelArgs(tc.in)
		if err != nil {
			t.Errorf("ParseKernelArgs(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseKernelArgs(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestParseKernelArgsRejects(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"console=tty0", "the lab sets console itself"},
		{"quiet panic=10", "the lab sets panic itself"},
		{"rdinit=/bin/sh", "the lab sets rdinit itself"},
		{"init=/bin/sh", "the lab sets init itself"},
		{"clocksource=tsc -- x", "would pass the rest of the command line to init"},
		{"=tsc", "no name before '='"},
		{"clock/source=tsc", "the name has '/'"},
		{"a=\"b", "the value has '\"'"},
		{"a='b'", "the value has '\\''"},
		{"a=b\x00", "the value has '\\x00'"},
		{"a=é", "the value has 'é'"},
		{"x=" + strings.Repeat("y", 2100), "kernel command line of 2131 bytes"},
	} {
		_, err := ParseKernelArgs(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseKernelArgs(%q): error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
	// Options.Append set directly is checked too, and a parameter in it
	// cannot hide a space (it would become two parameters).
	for _, a := range [][]string{{""}, {"a b"}, {"panic=1"}} {
		if err := CheckKernelArgs(a); err == nil {
			t.Errorf("CheckKernelArgs(%q) = nil, want an error", a)
		}
	}
}

func TestStartChecksAppend(t *testing.T) {
	// Start refuses bad parameters before it fetches or boots anything.
	_, err := Start(context.Background(), Options{Append: []string{"console=tty0"}})
	if err == nil || !strings.Contains(err.Error(), `kernel parameter "console=tty0"`) {
		t.Fatalf("Start: %v, want the kernel parameter's error", err)
	}
}

func TestQemuArgsICount(t *testing.T) {
	for nodes := 1; nodes <= 2; nodes++ {
		l := &Lab{opts: Options{Nodes: nodes, MemoryMB: 1024, ICount: true}, Kernel: &Kernel{Vmlinuz: "/k/vmlinuz"}, tmp: "/t"}
		args := strings.Join(l.qemuArgs(0, "/k/initrd", "tcg", nil), " ")
		for _, want := range []string{"-smp 1 ", "-accel tcg,thread=single -icount shift=0,sleep=off "} {
			if !strings.Contains(args, want) {
				t.Errorf("%d node(s), ICount: args lack %q: %s", nodes, want, args)
			}
		}
		if strings.Contains(args, "thread=multi") {
			t.Errorf("%d node(s), ICount: multi-threaded TCG: %s", nodes, args)
		}
		l.opts.ICount = false
		if args := strings.Join(l.qemuArgs(0, "/k/initrd", "tcg", nil), " "); strings.Contains(args, "-icount") {
			t.Errorf("%d node(s), no ICount: %s", nodes, args)
		}
	}
	if _, err := Start(context.Background(), Options{ICount: true, Accel: "kvm"}); err == nil || !strings.Contains(err.Error(), "--icount") {
		t.Errorf("Start(ICount, kvm): %v, want an error naming --icount", err)
	}
}
