// Copyright 2026 The rdmago Authors.

package cm

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/uverbs"
)

// cm and uverbs share one set of sentinels (as cilium/ebpf's packages share
// one ErrNotSupported): an error from either package matches the other's,
// so a caller tests once whatever layer failed.
func TestSentinelsSharedWithUverbs(t *testing.T) {
	_, _, cmErr := qpAttrFromABI(&abi.QPAttr{QPAttrMask: abi.IB_QP_STATE | abi.IB_QP_ALT_PATH})
	if !errors.Is(cmErr, ErrNotSupported) || !errors.Is(cmErr, uverbs.ErrNotSupported) {
		t.Errorf("cm's alternate-path error %v does not match uverbs.ErrNotSupported", cmErr)
	}
	for _, c := range []struct {
		name       string
		cm, uverbs error
	}{
		{"ErrClosed", ErrClosed, uverbs.ErrClosed},
		{"ErrNoDevice", ErrNoDevice, uverbs.ErrNoDevice},
		{"ErrNotSupported", ErrNotSupported, uverbs.ErrNotSupported},
	} {
		if !errors.Is(fmt.Errorf("open: %w", c.cm), c.uverbs) || !errors.Is(fmt.Errorf("open: %w", c.uverbs), c.cm) {
			t.Errorf("cm.%s and uverbs.%s do not match each other", c.name, c.name)
		}
	}
}
