// Copyright 2026 The rdmago Authors.

//go:build linux

package cm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/uverbs"
)

// localPair connects to this node's own address (rxe loops back), with
// lo for the listener and do for the dialer; it returns both ends.
func localPair(t *testing.T, e labEnv, port int, lo, do *Options) (server, client *Conn) {
	t.Helper()
	ctx := labtest.Context(t, 60*time.Second)
	addr := netip.AddrPortFrom(e.addr, uint16(port)).String()
	l, err := Listen(ctx, addr, lo)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type res struct {
		c   *Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := l.Accept(ctx)
		ch <- res{c, err}
	}()
	client, err = Dial(ctx, addr, do)
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		client.Close()
		t.Fatal(r.err)
	}
	return r.c, client
}

// TestLabQueryAndOptions: the ID queries report the connection's addresses,
// GIDs and path; TOS and the ACK timeout reach the QP; REUSEADDR lets a
// listener take the port again.
func TestLabQueryAndOptions(t *testing.T) {
	e := requireLab(t)
	base := resources(t)
	const port = labPortBase + 9
	s, c := localPair(t, e, port, &Options{ReuseAddr: true}, &Options{TOS: 0x20, AckTimeout: 16})
	info, err := c.ID().Query()
	if err != nil {
		t.Fatal(err)
	}
	if info.Local.Addr() != e.addr || info.Remote != netip.AddrPortFrom(e.addr, port) || info.Port != 1 || info.NodeGUID == 0 {
		t.Errorf("query: %+v", info)
	}
	g, err := c.ID().QueryGID()
	if err != nil {
		t.Fatal(err)
	}
	if want := uverbs.GIDFromAddr(e.addr); g.Src.GID != want || g.Dst.GID != want {
		t.Errorf("query gid: src %x dst %x, want %v", g.Src.GID, g.Dst.GID, want)
	}
	if g.Dst.ServiceID&0xffff != port {
		t.Errorf("destination service id %#x does not end in port %d", g.Dst.ServiceID, port)
	}
	paths, err := c.ID().QueryPath()
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 1 {
		t.Errorf("%d path records, want 1 (RoCE)", len(paths))
	} else if paths[0].DGID != uverbs.GIDFromAddr(e.addr) || paths[0].MTU == 0 {
		t.Errorf("query path: %+v, want DGID %v and an MTU", paths[0], uverbs.GIDFromAddr(e.addr))
	}
	rt, err := c.ID().QueryRoute()
	if err != nil {
		t.Fatal(err)
	}
	if rt.Remote != netip.AddrPortFrom(e.addr, port) || len(rt.Paths) == 0 || rt.Paths[0].DGID != uverbs.GIDFromAddr(e.addr) {
		t.Errorf("query route: %+v", rt)
	}
	a, err := c.QP().Query()
	if err != nil {
		t.Fatal(err)
	}
	if a.AH.GRH.TrafficClass != 0x20 || a.Timeout != 16 {
		t.Errorf("client QP: traffic class %#x timeout %d, want 0x20 and 16", a.AH.GRH.TrafficClass, a.Timeout)
	}
	t.Logf("client QP: %v, dest %#x, traffic class %#x, timeout %d, path MTU %v", a.State, a.DestQPN, a.AH.GRH.TrafficClass, a.Timeout, a.PathMTU)
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	// The listener above is closed; take its port again.
	s, c = localPair(t, e, port, &Options{ReuseAddr: true}, nil)
	if err := errors.Join(c.Close(), s.Close()); err != nil {
		t.Error(err)
	}
	checkNoLeaks(t, base)
}

// TestLabCallerObjects: a connection may use the caller's PD, CQ and
// completion channel, and leaves them alive and empty.
func TestLabCallerObjects(t *testing.T) {
	e := requireLab(t)
	vctx, err := uverbs.Open(e.Dev)
	if err != nil {
		t.Fatal(err)
	}
	defer vctx.Close()
	pd, err := vctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := vctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := vctx.CreateCQ(64, &uverbs.CQOptions{Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	s, c := localPair(t, e, labPortBase+10, nil, &Options{PD: pd, SendCQ: cq, RecvCQ: cq, CompChannel: ch})
	if c.PD() != pd || c.SendCQ() != cq || c.RecvCQ() != cq || c.CompChannel() != ch || c.Context() != vctx {
		t.Fatal("the connection does not use the caller's objects")
	}
	if err := errors.Join(c.Close(), s.Close()); err != nil {
		t.Fatal(err)
	}
	// Still alive: a QP can be made on them, and they close cleanly.
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatalf("the caller's PD/CQ after Conn.Close: %v", err)
	}
	if err := errors.Join(qp.Close(), cq.Close(), ch.Close(), pd.Close()); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(labtest.Context(t, 10*time.Second), e.Addr+":1", &Options{SendCQ: cq, RecvCQ: cq}); err == nil || errors.Is(err, ErrNoListener) {
		t.Fatalf("CQs without their PD: %v", err)
	}
}

// TestLabTimewait: Close with WaitTimewait returns after TIMEWAIT_EXIT.
func TestLabTimewait(t *testing.T) {
	e := requireLab(t)
	s, c := localPair(t, e, labPortBase+11, nil, &Options{WaitTimewait: true, CloseTimeout: 20 * time.Second})
	start := time.Now()
	err := c.Close()
	t.Logf("close with TIMEWAIT_EXIT took %v", time.Since(start).Round(time.Millisecond))
	if err := errors.Join(err, s.Close()); err != nil {
		t.Fatal(err)
	}
}

// TestLabZZDeviceRemoval (last: it deletes and re-creates the node's rxe
// device): removing the device ends the connections with DEVICE_REMOVAL
// (ErrDeviceRemoved) and fails a waiting Accept; once they are closed the
// kernel finishes the removal, and after the device is back new
// connections work.
func TestLabZZDeviceRemoval(t *testing.T) {
	e := requireLab(t)
	netdev := e.Netdev
	if netdev == "" {
		labtest.Missing(t, "RDMALAB_NETDEV unset: cannot re-create the device afterwards")
	}
	ctx := labtest.Context(t, 3*time.Minute)
	port := labPortBase + 12
	// The removal waits for every user of the device: if an earlier test
	// leaked one, removing it would hang the node, so check first.
	if r := resources(t); r["ctx"] != 0 || r["cm_id"] != 0 { // the kernel's own MAD QP, CQ and PD remain
		t.Fatalf("RDMA objects left by earlier tests (%v): not removing the device", r)
	}
	s, c := localPair(t, e, port, nil, nil)
	l, err := Listen(ctx, netip.AddrPortFrom(e.addr, uint16(port+1)).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	acceptErr := make(chan error, 1)
	go func() {
		_, err := l.AcceptRequest(ctx)
		acceptErr <- err
	}()
	nl, err := rdmanl.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	dev, err := nl.DeviceByName(e.Dev)
	if err != nil {
		t.Fatal(err)
	}
	removed := make(chan error, 1)
	go func() {
		nl2, err := rdmanl.Dial()
		if err != nil {
			removed <- err
			return
		}
		defer nl2.Close()
		removed <- nl2.DelLink(dev.Index)
	}()
	restore := func() {
		if err := nl.AddLink(e.Dev, "rxe", netdev); err != nil {
			t.Fatalf("re-create %s on %s: %v", e.Dev, netdev, err)
		}
		waitFor := time.Now().Add(60 * time.Second)
		for {
			c, err := dialRetryUntil(ctx, e, port+2)
			if err == nil {
				c.Close()
				return
			}
			if time.Now().After(waitFor) {
				t.Fatalf("no connection after re-creating %s: %v", e.Dev, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	for _, conn := range []*Conn{c, s} {
		// Done may close first for a DISCONNECTED (the other end, on the
		// same device, can be torn down first); DEVICE_REMOVAL follows.
		select {
		case <-conn.ID().Removed():
			if !errors.Is(conn.Err(), ErrDeviceRemoved) {
				t.Errorf("connection ended with %v, want ErrDeviceRemoved", conn.Err())
			}
		case <-time.After(60 * time.Second):
			t.Errorf("no DEVICE_REMOVAL within 60 s (the connection ended with %v)", conn.Err())
		}
		select {
		case <-conn.Done():
		default:
			t.Error("DEVICE_REMOVAL did not end the connection")
		}
		// Closing releases the device: the removal can only finish then.
		if err := conn.Close(); err != nil {
			t.Logf("close after removal: %v", err)
		}
	}
	select {
	case err := <-acceptErr:
		if !errors.Is(err, ErrDeviceRemoved) {
			t.Errorf("accept during removal: %v, want ErrDeviceRemoved", err)
		}
		t.Logf("accept: %v", err)
	case <-time.After(60 * time.Second):
		t.Error("the waiting accept did not fail")
	}
	l.Close()
	select {
	case err := <-removed:
		if err != nil {
			t.Errorf("delete link: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the device removal did not finish after the connections closed")
	}
	restore()
}

// dialRetryUntil listens and dials on this node's address once.
func dialRetryUntil(ctx context.Context, e labEnv, port int) (*Conn, error) {
	addr := netip.AddrPortFrom(e.addr, uint16(port)).String()
	l, err := Listen(ctx, addr, nil)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(ctx); err == nil {
			<-c.Done()
			c.Close()
		}
	}()
	c, err := Dial(ctx, addr, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return c, nil
}
