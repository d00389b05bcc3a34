// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/tools/devinfo"
)

// fixture is a System over the 6.1 lab capture (read-only; no netlink).
func fixture() *devinfo.System {
	return &devinfo.System{FS: sysfs.New("../../internal/sysfs/testdata/lab-6.1"), Creds: devinfo.Creds{UID: 0}}
}

func runArgs(t *testing.T, sys *devinfo.System, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb, sys)
	return code, out.String(), errb.String()
}

func TestCommandsText(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"devices"}, "    rxe0            \tc8d4befffe5c74c2\n"},
		{[]string{"show"}, "hca_id:\trxe0\n"},
		{[]string{"show", "rxe0", "-v"}, "GID[  1]:\t\t::ffff:10.77.0.1, RoCE v2"},
		{[]string{"-v", "show"}, ""}, // flags are per command: -v is not a command
		{[]string{"gids", "rxe0"}, "0000:0000:0000:0000:0000:ffff:0a4d:0001 10.77.0.1"},
		{[]string{"link", "show"}, "link rxe0/1 state ACTIVE physical_state LINK_UP netdev v0"},
		{[]string{"link"}, "link rxe0/1 state ACTIVE"},
		{[]string{"counters", "rxe0"}, "rxe0/1    hw    sent_pkts"},
		{[]string{"diagnose"}, "[ ok ] devices"},
	} {
		code, out, errs := runArgs(t, fixture(), c.args...)
		if c.want == "" {
			if code != 2 {
				t.Errorf("%q: status %d, want 2 (usage)", c.args, code)
			}
			continue
		}
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%q: status %d, stderr %q, output lacks %q:\n%s", c.args, code, errs, c.want, out)
		}
	}
}

func TestCommandsJSON(t *testing.T) {
	for _, args := range [][]string{
		{"devices"}, {"show", "--json", "-v"}, {"gids"}, {"link", "show"}, {"counters"}, {"diagnose"},
	} {
		code, out, errs := runArgs(t, fixture(), append(args, "--json")...)
		if code != 0 {
			t.Errorf("%q: status %d: %s", args, code, errs)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("%q: not JSON: %v\n%s", args, err, out)
		}
		if list, ok := v.([]any); ok && len(list) == 0 {
			t.Errorf("%q: empty list", args)
		}
	}
	_, out, _ := runArgs(t, fixture(), "gids", "--json")
	var rows []devinfo.GIDRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 || !rows[1].RoCEv2 || rows[1].IP.String() != "10.77.0.1" {
		t.Errorf("gids JSON %v: %s", err, out)
	}
}

func TestCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "usage"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"show", "mlx5_0"}, 1, `rdma device "mlx5_0"`},
		{[]string{"show", "a", "b"}, 2, "unexpected arguments"},
		{[]string{"link", "add", "rxe1"}, 2, "usage: rdmainfo link add"},
		{[]string{"link", "add", "rxe1", "type", "rxe", "dev", "v0"}, 2, "usage: rdmainfo link add"},
		{[]string{"link", "add", "rxe1", "type", "rxe", "netdev", "v0"}, 1, "needs RDMA netlink"},
		{[]string{"link", "add", "rxe1", "type", "ib", "netdev", "v0"}, 1, `link type "ib"`},
		{[]string{"link", "del"}, 2, "usage: rdmainfo link del"},
		{[]string{"link", "flip"}, 2, "unknown subcommand"},
		{[]string{"resources"}, 1, "need RDMA netlink"},
		{[]string{"counters", "--watch", "x"}, 2, "invalid value"},
	} {
		code, _, errs := runArgs(t, fixture(), c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%q: status %d (want %d), stderr %q (want %q)", c.args, code, c.code, errs, c.msg)
		}
	}
	// A blocking problem makes diagnose exit 1.
	s := fixture()
	s.Memlock = func() (uint64, uint64, error) { return 64 << 10, 64 << 10, nil }
	if code, out, _ := runArgs(t, s, "diagnose"); code != 1 || !strings.Contains(out, "[FAIL] memlock") {
		t.Errorf("diagnose with 64 KiB memlock: status %d\n%s", code, out)
	}
}

func TestCountersWatch(t *testing.T) {
	code, out, errs := runArgs(t, fixture(), "counters", "rxe0", "--watch", "10ms", "--count", "2", "--json")
	if code != 0 {
		t.Fatalf("status %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out)
	}
	for _, l := range lines {
		var v struct{ Counters []devinfo.Counter }
		if err := json.Unmarshal([]byte(l), &v); err != nil || len(v.Counters) < 10 {
			t.Errorf("line %q: %v", l, err)
		}
	}
}
