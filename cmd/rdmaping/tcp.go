// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/oob"
	"github.com/rdmago/rdmago/tools/ping"
	"github.com/rdmago/rdmago/uverbs"
)

// localAddrTo returns the source address the kernel picks towards peer.
func localAddrTo(peer string, port int) (netip.Addr, error) {
	u, err := net.Dial("udp", hostPort(peer, port))
	if err != nil {
		return netip.Addr{}, err
	}
	defer u.Close()
	ap, err := netip.ParseAddrPort(u.LocalAddr().String())
	if err != nil {
		return netip.Addr{}, err
	}
	return ap.Addr().Unmap(), nil
}

// openForTCP opens the device and finds the local RoCE v2 GID: the one of
// the local address (the client's source towards the server, the server's
// -a), or with neither the device's first IPv4 RoCE v2 GID.
func (c *config) openForTCP() (*uverbs.Context, uverbs.GIDEntry, error) {
	var local netip.Addr
	var err error
	switch {
	case c.client:
		if local, err = localAddrTo(c.addr, c.port); err != nil {
			return nil, uverbs.GIDEntry{}, fmt.Errorf("find the local address towards %s: %w", c.addr, err)
		}
	case c.addr != "":
		if local, err = netip.ParseAddr(c.addr); err != nil {
			return nil, uverbs.GIDEntry{}, fmt.Errorf("-a %q: %w", c.addr, err)
		}
	}
	var ctx *uverbs.Context
	switch {
	case c.dev != "":
		ctx, err = uverbs.Open(c.dev)
	case local.IsValid() && !local.IsUnspecified():
		ctx, err = openByIP(local)
	default:
		ctx, err = uverbs.Open("")
	}
	if err != nil {
		return nil, uverbs.GIDEntry{}, err
	}
	var g uverbs.GIDEntry
	if local.IsValid() && !local.IsUnspecified() {
		g, err = ctx.GIDForIP(1, local)
	} else {
		var ents []uverbs.GIDEntry
		if ents, err = ctx.GIDTable(1); err == nil {
			err = fmt.Errorf("no IPv4 RoCE v2 GID on %s: %w", ctx.Device().Name, uverbs.ErrNoGID)
			for _, e := range ents {
				if e.Type == uverbs.GIDTypeRoCEv2 && e.GID.Addr().Is4() {
					g, err = e, nil
					break
				}
			}
		}
	}
	if err != nil {
		ctx.Close()
		return nil, g, err
	}
	return ctx, g, nil
}

// tcpEnd is what both ends of an out-of-band TCP exchange set up first:
// the server's listener, then the device, its GID and port 1.
type tcpEnd struct {
	ln   net.Listener // the server's; nil for the client
	dev  *uverbs.Context
	gid  uverbs.GIDEntry
	port uverbs.PortAttr
}

// tcpSetup listens (the server, before touching the device, so a client
// started at the same time finds it) and opens the device (openForTCP).
// The caller must Close the result.
func (c *config) tcpSetup(logf func(string, ...any)) (*tcpEnd, error) {
	t := &tcpEnd{}
	var err error
	if c.server {
		if t.ln, err = net.Listen("tcp", hostPort(c.addr, c.port)); err != nil {
			return nil, err
		}
	}
	if t.dev, t.gid, err = c.openForTCP(); err != nil {
		t.Close()
		return nil, err
	}
	logf("verbs: device %s, GID %v (index %d, %v)", t.dev.Device().Name, t.gid.GID, t.gid.Index, t.gid.Type)
	if t.port, err = t.dev.QueryPort(1); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Close closes the device and the listener.
func (t *tcpEnd) Close() {
	if t.dev != nil {
		t.dev.Close()
	}
	if t.ln != nil {
		t.ln.Close()
	}
}

// regMRLogged registers memory on pd, narrating each registration.
func regMRLogged(pd *uverbs.PD, logf func(string, ...any)) func([]byte, uverbs.AccessFlags) (*uverbs.MR, error) {
	return func(b []byte, a uverbs.AccessFlags) (*uverbs.MR, error) {
		mr, err := pd.RegMR(b, a)
		if err == nil {
			logf("verbs: registered MR of %d bytes (lkey %#x, rkey %#x, %v)", len(b), mr.LKey(), mr.RKey(), a)
		}
		return mr, err
	}
}

// randomPSN is a starting packet sequence number as ibv_rc_pingpong picks
// one: random, 24 bits.
func randomPSN() uint32 { return rand.Uint32() & 0xffffff }

// runDemoTCP runs a demo on a QP connected with ibv_rc_pingpong's
// out-of-band TCP exchange of LID, QPN, PSN and GID (oob.Client and
// oob.Server) instead of rdma_cm.
func runDemoTCP(ctx context.Context, c *config) error {
	d, err := c.demo()
	if err != nil {
		return err
	}
	logf := c.narrate()
	t, err := c.tcpSetup(logf)
	if err != nil {
		return err
	}
	defer t.Close()
	ln, dev, gid, port := t.ln, t.dev, t.gid, t.port
	pd, err := dev.AllocPD()
	if err != nil {
		return err
	}
	logf("verbs: allocated PD")
	ch, err := dev.CreateCompChannel()
	if err != nil {
		return err
	}
	cq, err := dev.CreateCQ(2*d.Depth(), &uverbs.CQOptions{Channel: ch})
	if err != nil {
		return err
	}
	logf("verbs: created completion channel and CQ (%d entries)", cq.CQE())
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: d.Depth(), MaxRecvWR: d.Depth(), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return err
	}
	logf("verbs: created %v QP %#x", qp.Type(), qp.Num())
	if err := qp.ModifyToInit(1, demoAccess, 0); err != nil {
		return err
	}
	logf("verbs: QP %#x -> %v (port 1, access %v)", qp.Num(), uverbs.QPSInit, demoAccess)
	link := &ping.Link{QP: qp, PD: pd, SendCQ: cq, RecvCQ: cq, Logf: c.logf(), Debugf: c.debugf(), PeerTimeout: c.peerTimeout,
		RegMR: regMRLogged(pd, logf)}
	if err := d.Setup(link); err != nil {
		return err
	}
	local := uverbs.Dest{LID: port.LID, QPN: qp.Num(), PSN: randomPSN(), GID: gid.GID}
	opts := uverbs.ConnectOptions{SGIDIndex: gid.Index, MTU: port.ActiveMTU}
	connect := func(remote uverbs.Dest) error {
		logf("tcp: peer LID %#x QPN %#x PSN %#x GID %v", remote.LID, remote.QPN, remote.PSN, remote.GID)
		if err := qp.Connect(remote, local.PSN, &opts); err != nil {
			return err
		}
		logf("verbs: QP %#x -> %v -> %v (dest qp %#x, mtu %v, sgid index %d)", qp.Num(), uverbs.QPSRTR, uverbs.QPSRTS, remote.QPN, opts.MTU, opts.SGIDIndex)
		return nil
	}
	logf("tcp: local LID %#x QPN %#x PSN %#x GID %v", local.LID, local.QPN, local.PSN, local.GID)
	if c.client {
		remote, err := exchangeRetry(ctx, hostPort(c.addr, c.port), func(ctx context.Context, addr string) (uverbs.Dest, error) {
			return oob.Client(ctx, addr, local, nil)
		})
		if err != nil {
			return err
		}
		if err := connect(remote); err != nil {
			return err
		}
		return demoPeer(d.Client(ctx), c.mode)
	}
	logf("tcp: waiting for the client's exchange on %v", ln.Addr())
	if _, err := oob.Server(ctx, ln, local, connect, nil); err != nil {
		return err
	}
	return demoPeer(d.Server(ctx), c.mode)
}

// demoPeer explains a demo over --tcp whose peer went silent or failed
// the connection: the peer of the same exchange may be a C pingpong.
func demoPeer(err error, mode string) error {
	var wce *uverbs.WCError
	if errors.Is(err, ping.ErrPeerSilent) || (errors.As(err, &wce) && wce.WC.Status == uverbs.WCRetryExcErr) {
		return fmt.Errorf("%w: the peer does not run rdmaping --tcp --mode %s; if it is rdma-core's ibv_rc/uc/ud/srq_pingpong, run rdmaping --tcp without --mode (with --qp-type or --srq to match)", err, mode)
	}
	return err
}

// exchangeRetry runs exchange (oob.Client or oob.ClientN), retried for up
// to 10 s while the server is not listening yet (ibv_rc_pingpong's client
// gives up at once).
func exchangeRetry[T any](ctx context.Context, addr string, exchange func(context.Context, string) (T, error)) (T, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		remote, err := exchange(ctx, addr)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return remote, err
		}
		select {
		case <-ctx.Done():
			return remote, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// openByIP opens the RDMA device on the interface that holds addr.
func openByIP(addr netip.Addr) (*uverbs.Context, error) {
	d, err := uverbs.LookupDevice(uverbs.DeviceQuery{IP: addr})
	if err != nil {
		return nil, fmt.Errorf("open rdma device: %w", err)
	}
	return uverbs.Open(d.Name)
}
