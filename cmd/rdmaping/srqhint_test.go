// Copyright 2026 The rdmago Authors.

package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/oob"
)

// TestSRQHint: oob's address-count mismatch becomes rdmaping's flag advice
// (give --srq without it, drop it with it); other errors are unchanged.
func TestSRQHint(t *testing.T) {
	mismatch := fmt.Errorf("exchange: %w", oob.ErrAddressCount)
	if err := srqHint(mismatch, false); !strings.HasSuffix(err.Error(), "give --srq") || !errors.Is(err, oob.ErrAddressCount) {
		t.Errorf("without --srq: %v", err)
	}
	if err := srqHint(mismatch, true); !strings.HasSuffix(err.Error(), "drop --srq") {
		t.Errorf("with --srq: %v", err)
	}
	other := errors.New("other")
	if srqHint(other, false) != other {
		t.Error("srqHint changed an unrelated error")
	}
}
