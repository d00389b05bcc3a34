// Copyright 2026 The rdmago Authors.

package trace

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/rdmago/rdmago/internal/labtest"
)

// testMaps creates the tracer's maps, or skips when this kernel or process
// cannot use BPF (outside the lab: labtest.Missing fails it inside).
func testMaps(t *testing.T) map[string]*ebpf.Map {
	t.Helper()
	if err := rlimit.RemoveMemlock(); err != nil {
		labtest.Missing(t, "BPF unavailable here: %v", err)
	}
	maps := map[string]*ebpf.Map{}
	t.Cleanup(func() {
		for _, m := range maps {
			m.Close()
		}
	})
	for name, spec := range mapSpecs(1 << 16) {
		m, err := ebpf.NewMap(spec)
		if errors.Is(err, unix.EPERM) || errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, os.ErrPermission) {
			labtest.Missing(t, "BPF maps unavailable here (needs root and a BPF kernel): %v", err)
		}
		if err != nil {
			t.Fatalf("create map %s: %v", name, err)
		}
		maps[name] = m
	}
	return maps
}

// TestProgramsLoad runs every program shape through the running kernel's
// verifier (kprobe and tracepoint programs load without their attach point).
func TestProgramsLoad(t *testing.T) {
	maps := testMaps(t)
	for _, p := range allTestPrograms(t) {
		typ := ebpf.Kprobe
		if p.tp {
			typ = ebpf.TracePoint
		}
		prog, err := loadProgram("rdmatrace_test", typ, p.insns, maps)
		if err != nil {
			var ve *ebpf.VerifierError
			if errors.As(err, &ve) {
				t.Errorf("%s: %+v", p.name, ve)
			} else {
				t.Errorf("%s: %v", p.name, err)
			}
			continue
		}
		prog.Close()
	}
}
