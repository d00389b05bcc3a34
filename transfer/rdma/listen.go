package rdma

// Listen and the Listener: cm.Listener's Accept sets the connections up.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/transfer"
)

// Listener accepts senders' connections (a transfer.Listener) through
// cm.Listener.Accept: each connection request is set up in its own
// goroutine within Options.AcceptTimeout, at most Options.MaxPendingAccepts
// at once (a further request evicts the oldest), so no peer can hold up
// the others: a half-open connect (the REP answered by no RTU) holds one
// pending slot until AcceptTimeout or until newer requests push it out.
// A request carrying rsockets' connection data (rcopy's client, a program
// under librspreload) is rejected at once and reported (Options.OnRefuse).
type Listener struct {
	l   *cm.Listener
	cfg Options
}

// Listen listens on addr ("host:port", empty host for every RDMA device;
// the port defaults to DefaultPort): rdma_bind_addr and rdma_listen through
// cm.Listen, whose Accept reads the requests from the first Accept on.
// The caller must Close it.
func Listen(ctx context.Context, addr string, opts *Options) (*Listener, error) {
	cfg := opts.value()
	addr = withDefaultPort(addr)
	l := &Listener{cfg: cfg}
	cl, err := cm.Listen(ctx, addr, &cm.Options{
		Logf: cfg.Logf, ReuseAddr: true,
		AcceptTimeout: cfg.acceptTimeout(), MaxPendingAccepts: cfg.maxPending(),
		BusyRejectData: []byte(busyText), CheckRequest: l.check,
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	l.l = cl
	return l, nil
}

// errRsocketPeer is check's refusal of a peer speaking rsockets.
var errRsocketPeer = errors.New("the peer speaks " + rsocketPeer)

// check is the cm.Listener's Options.CheckRequest: it refuses a peer
// speaking rsockets and gives every other request a Transport of its own,
// whose Setup registers its buffers (Conn.UserData finds it again).
func (l *Listener) check(req *cm.Request) (*cm.Options, error) {
	if foreign, _ := peerData(req.Param.PrivateData); foreign {
		l.refuse(req)
		return nil, errRsocketPeer
	}
	t := newTransport(l.cfg, true)
	o := t.options()
	o.UserData = t
	return o, nil
}

// refuseText is the private data of the reject a Listener answers an
// rsockets peer with (its rconnect fails with ECONNREFUSED either way).
const refuseText = "rdmacp receiver: rsockets connections are refused"

// refuse rejects a connection request from a peer speaking rsockets and
// says so (Options.OnRefuse, else Logf): the listener goes on serving
// others.
func (l *Listener) refuse(req *cm.Request) {
	var peer netip.AddrPort
	from := "an unknown address"
	if a, err := req.ID.Query(); err == nil && a.Remote.IsValid() {
		peer, from = a.Remote, a.Remote.String()
	}
	msg := fmt.Sprintf("a peer speaking %s tried to connect from %s: refused", rsocketPeer, from)
	if err := req.Reject([]byte(refuseText)); err != nil {
		msg += fmt.Sprintf(" (%v)", err)
	}
	if l.cfg.OnRefuse != nil {
		l.cfg.OnRefuse(peer, msg)
		return
	}
	l.logf("%s", msg)
}

// Refused is how many connection requests the listener refused because
// the peer speaks rsockets.
func (l *Listener) Refused() int { return int(l.l.Stats().Refused) }

func (l *Listener) logf(format string, args ...any) {
	if l.cfg.Logf != nil {
		l.cfg.Logf(format, args...)
	}
}

// Accept waits for the next sender whose connection is set up. A request
// that fails to set up (or within AcceptTimeout) is rejected or dropped and
// logged; Accept returns an error only when the listener or ctx ends.
func (l *Listener) Accept(ctx context.Context) (transfer.Transport, error) {
	for {
		c, err := l.l.Accept(ctx)
		if err == nil {
			t := c.UserData().(*Transport)
			t.start(c)
			return t, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var tmp interface{ Temporary() bool }
		if !errors.As(err, &tmp) || !tmp.Temporary() {
			return nil, err
		}
		// A setup that failed on this side (cm logged it): the
		// listener goes on, as it does when the peer's side fails.
	}
}

// Close stops listening and drops the connections being set up or not yet
// taken by Accept. It is idempotent.
func (l *Listener) Close() error { return l.l.Close() }

// Addr is the address listened on.
func (l *Listener) Addr() string { return l.l.Addr().String() }
