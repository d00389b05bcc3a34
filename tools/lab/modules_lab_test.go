// Copyright 2026 The rdmago Authors.

package lab

import (
	"os"
	"testing"

	"github.com/rdmago/rdmago/internal/labtest"
)

// TestLabGuestModules checks, inside the guest, that every module of
// GuestModules is live (loaded by the guest init, or built into the kernel):
// /sys/module/NAME exists. sch_netem is the one no other lab test would
// miss at boot.
func TestLabGuestModules(t *testing.T) {
	labtest.Require(t)
	for _, m := range GuestModules {
		if _, err := os.Stat("/sys/module/" + ModName(m)); err != nil {
			t.Errorf("module %s is not loaded: %v", m, err)
		}
	}
}
