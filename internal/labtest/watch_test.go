// Copyright 2026 The rdmago Authors.

package labtest

import (
	"os"
	"testing"
)

func TestDiffCounters(t *testing.T) {
	for _, c := range []struct {
		before, after map[string]uint64
		want          string
	}{
		{nil, nil, "none"},
		{map[string]uint64{"a": 1}, map[string]uint64{"a": 1}, "none"},
		{map[string]uint64{"rcvd_seq_err": 1, "sent_pkts": 10}, map[string]uint64{"rcvd_seq_err": 3, "sent_pkts": 10, "duplicate_request": 2},
			"duplicate_request +2, rcvd_seq_err +2"},
	} {
		if got := diffCounters(c.before, c.after); got != c.want {
			t.Errorf("diffCounters(%v, %v) = %q, want %q", c.before, c.after, got, c.want)
		}
	}
}

func TestStatusKB(t *testing.T) {
	if kb, err := StatusKB("VmRSS"); err != nil || kb <= 0 {
		t.Errorf("StatusKB(VmRSS) = %d, %v; want a positive size", kb, err)
	}
	if _, err := StatusKB("NoSuchField"); err == nil {
		t.Error("StatusKB of a missing field: no error")
	}
}

func TestOwnThread(t *testing.T) {
	if !OwnThread(uint32(os.Getpid())) {
		t.Error("the main thread is not this process's")
	}
	if OwnThread(0) || OwnThread(1<<31) {
		t.Error("pid 0 or a pid that cannot exist taken for this process's thread")
	}
}
