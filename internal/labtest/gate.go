// Copyright 2026 The rdmago Authors.

package labtest

import (
	"strings"
	"testing"

	"github.com/rdmago/rdmago/internal/sysfs"
)

// Gated lists the lab tests that may end as skipped on a kernel that lacks
// a feature, by test name (a subtest's parent covers it) and the feature.
// docs/lab.md lists the same (TestGatedDocumented); nothing else may skip
// in the lab for a missing feature.
var Gated = map[string]string{
	"TestLabMWType1":  "memory windows (rxe since Linux 5.12)",
	"TestLabMWType2":  "memory windows (rxe since Linux 5.12)",
	"TestLabODP":      "on-demand paging (rxe's, newer than Linux 6.12)",
	"TestLabODPUnmap": "on-demand paging (rxe's, newer than Linux 6.12)",
}

// Lacks ends t for a verb the kernel refused as one it lacks. unsupported
// is the caller's errors.Is(err, ErrNotSupported): the kernel's own answer
// (an ioctl's or a command's EOPNOTSUPP), never a guess from its version.
// A test on Gated is then skipped, naming the kernel and the feature;
// anything else fails t with both and err.
func Lacks(t testing.TB, err error, unsupported bool) {
	t.Helper()
	name, _, _ := strings.Cut(t.Name(), "/")
	feature, gated := Gated[name]
	switch {
	case unsupported && gated:
		t.Skipf("%s lacks %s (a gated test, docs/lab.md): %v", KernelRelease(), feature, err)
	case unsupported:
		t.Fatalf("%s lacks what this test needs (not on labtest.Gated): %v", KernelRelease(), err)
	default:
		t.Fatal(err)
	}
}

// KernelRelease names the running kernel ("Linux 6.1.0-57-amd64").
func KernelRelease() string {
	if r := sysfs.New("/").Release(); r != "" {
		return "Linux " + r
	}
	return "this kernel"
}
