// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"strings"
	"testing"
)

func TestWatchFilters(t *testing.T) {
	devices := map[uint32]string{1: "rxe0", 2: "rxe1"}
	call := func(dev uint32) Event { return Event{Kind: KindVerbsWrite, Dev: dev} }
	cm := Event{Kind: KindCMEvent}
	f := &Formatter{Devices: devices}
	f.setQPOwner(17, QPOwner{PID: 7, Comm: "rping"})
	wc := func(qpn uint32) Event {
		b := make([]byte, 48)
		binary.NativeEndian.PutUint32(b[28:], qpn) // ib_uverbs_wc.qp_num
		return Event{Kind: KindCompletion, PID: 99, Comm: "ksoftirqd/0", Data: b}
	}
	for _, tc := range []struct {
		o    WatchOptions
		e    Event
		keep bool
	}{
		{WatchOptions{}, cm, true},
		{WatchOptions{Options: Options{PID: 7}}, cm, false},
		{WatchOptions{Options: Options{Comm: "rping"}}, cm, false},
		{WatchOptions{Options: Options{PID: 7}}, call(1), true},
		{WatchOptions{Dev: "rxe0"}, call(1), true},
		{WatchOptions{Dev: "rxe0"}, call(2), false},
		{WatchOptions{Dev: "rxe0"}, call(0), true}, // device unknown: kept
		{WatchOptions{Dev: "rxe0"}, call(9), true}, // not a uverbs device we know: kept
		// Completions are posted in another task: their QP's owner counts.
		{WatchOptions{}, wc(18), true},
		{WatchOptions{Options: Options{PID: 7}}, wc(17), true},
		{WatchOptions{Options: Options{Comm: "rping"}}, wc(17), true},
		{WatchOptions{Options: Options{PID: 8}}, wc(17), false},
		{WatchOptions{Options: Options{PID: 99}}, wc(18), false}, // owner unknown
	} {
		if got := tc.o.keep(tc.e, f); got != tc.keep {
			t.Errorf("%+v keeps %+v: %v, want %v", tc.o, tc.e, got, tc.keep)
		}
	}
}

func TestWatchOptionsCheck(t *testing.T) {
	for _, tc := range []struct {
		o    WatchOptions
		want string
	}{
		{WatchOptions{Interval: -1}, "must not be negative"},
		{WatchOptions{Interval: 1}, "--interval needs --summary"},
		{WatchOptions{Dev: "nosuchdev0"}, "no such RDMA device"},
		{WatchOptions{Options: Options{NoRXE: true, RXEAll: true}}, "does not go with --rxe-all"},
		{WatchOptions{Options: Options{NoRXE: true, RXEFentry: true}}, "does not go with --rxe-all, --rxe-fentry"},
		{WatchOptions{Options: Options{NoRXE: true, RXEKprobes: true}}, "or --rxe-kprobes"},
		{WatchOptions{Options: Options{RXEFentry: true, RXEKprobes: true}}, "contradict each other"},
	} {
		if err := tc.o.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.o, err, tc.want)
		}
	}
	for _, o := range []WatchOptions{{Interval: 1, Summary: true}, {Options: Options{RXEAll: true, RXEFentry: true}}, {Options: Options{RXEKprobes: true}}} {
		if err := o.Check(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
