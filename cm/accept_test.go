// Copyright 2026 The rdmago Authors.

package cm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
)

// Listener.Accept asks CheckRequest about each request: a refused one is
// rejected, counted and skipped, never returned; a setup that fails on
// this side (here: the fake kernel binds the id to no device) comes out of Accept as a
// temporary error and the listener goes on; AcceptRequest is refused
// while Accept reads the requests; Close ends Accept with ErrClosed.
func TestAcceptRefusesAndGoesOn(t *testing.T) {
	ch, f := newFakeChannel(t)
	ctx := testCtx(t)
	var checked int
	l, err := Listen(ctx, "10.0.0.1:7174", &Options{Channel: ch, CheckRequest: func(r *Request) (*Options, error) {
		checked++
		if bytes.HasPrefix(r.Param.PrivateData, []byte("bad")) {
			return nil, errors.New("bad request")
		}
		return nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lk := l.ID().Handle()
	bad := &abi.UCMConnParam{PrivateDataLen: 3}
	copy(bad.PrivateData[:], "bad")
	var refused []uint32
	for range 3 {
		refused = append(refused, f.connRequest(lk, bad))
	}
	good := f.connRequest(lk, &abi.UCMConnParam{})
	type res struct {
		c   *Conn
		err error
	}
	got := make(chan res, 1)
	go func() {
		c, err := l.Accept(ctx)
		got <- res{c, err}
	}()
	r := <-got
	if r.err == nil {
		r.c.Close()
		t.Fatal("Accept set up a connection on an id bound to no device")
	}
	t.Logf("Accept: %v", r.err)
	var tmp interface{ Temporary() bool }
	if !errors.As(r.err, &tmp) || !tmp.Temporary() {
		t.Fatalf("Accept after a setup failed on this side: %v, want a temporary error", r.err)
	}
	var rejected []uint32
	for _, c := range f.commands(abi.RDMA_USER_CM_CMD_REJECT) {
		rejected = append(rejected, c.Body.(*abi.UCMReject).ID)
	}
	if len(rejected) != 4 || rejected[0] != refused[0] || rejected[2] != refused[2] || rejected[3] != good {
		t.Errorf("rejected ids %v, want the refused %v, then the failed setup's %d", rejected, refused, good)
	}
	if s := l.Stats(); s.Refused != 3 || s.Failed != 1 || s.Accepted != 0 || s.Dropped != 0 || checked != 4 {
		t.Errorf("stats %+v after 3 refused requests and a failed setup (%d checked)", s, checked)
	}
	if _, err := l.AcceptRequest(ctx); err == nil {
		t.Error("AcceptRequest while Accept reads the requests succeeded")
	}
	go func() {
		c, err := l.Accept(ctx)
		got <- res{c, err}
	}()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if r := <-got; !errors.Is(r.err, ErrClosed) {
		t.Fatalf("Accept during Close: %v, want ErrClosed", r.err)
	}
	if _, err := l.Accept(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Accept after Close: %v, want ErrClosed", err)
	}
}
