// Copyright 2026 The rdmago Authors.

package labtest

import "testing"

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
