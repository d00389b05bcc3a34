// Copyright 2026 The rdmago Authors.

package cm

import (
	"context"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/abi"
)

func init() {
	fakeBodies[abi.RDMA_USER_CM_CMD_JOIN_MCAST] = func() any { return new(abi.UCMJoinMcast) }
	fakeBodies[abi.RDMA_USER_CM_CMD_LEAVE_MCAST] = func() any { return new(abi.UCMDestroyID) }
}

// TestJoinMulticastRouting: the kernel numbers memberships apart from ids,
// so a MULTICAST_JOIN names a membership id that may equal another ID's
// number; it must reach the ID that joined (by the join's cookie), count
// towards its events_reported, and LEAVE_MCAST must name the membership.
func TestJoinMulticastRouting(t *testing.T) {
	ch, f := newFakeChannel(t)
	a, err := ch.CreateID(PortSpaceUDP)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ch.CreateID(PortSpaceUDP)
	if err != nil {
		t.Fatal(err)
	}
	var joinUID uint64
	f.script = func(f *fakeKernel, c fakeCmd) error {
		if j, ok := c.Body.(*abi.UCMJoinMcast); ok {
			joinUID = j.UID
			binary.NativeEndian.PutUint32(c.Buf, b.kid) // the membership id collides with b's
		}
		return nil
	}
	group := netip.MustParseAddr("239.1.1.1")
	mc, err := a.JoinMulticast(group, JoinFullMember)
	if err != nil {
		t.Fatal(err)
	}
	f.script = nil
	if mc.kid != b.kid || joinUID != a.uid {
		t.Fatalf("membership %d (cookie %d), want %d (cookie %d)", mc.kid, joinUID, b.kid, a.uid)
	}
	// The kernel's event: the membership's id, the join's cookie, counted
	// for a's context.
	f.mu.Lock()
	e := fakeEvent{owner: a.kid}
	e.resp.UID, e.resp.ID, e.resp.Event = joinUID, mc.kid, uint32(EventMulticastJoin)
	e.resp.SetUDParam(&abi.UCMUDParam{QPNum: 0xffffff, QKey: 0x01234567})
	f.events = append(f.events, e)
	f.gen++
	f.cond.Broadcast()
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev, err := mc.AwaitJoin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != a || ev.UD.QPNum != 0xffffff || ev.UD.QKey != 0x01234567 {
		t.Errorf("event %+v", ev)
	}
	if n := b.pending(); n != 0 {
		t.Errorf("b got %d events", n)
	}
	if err := mc.Leave(); err != nil {
		t.Fatal(err)
	}
	leaves := f.commands(abi.RDMA_USER_CM_CMD_LEAVE_MCAST)
	if len(leaves) != 1 || leaves[0].Body.(*abi.UCMDestroyID).ID != mc.kid {
		t.Errorf("LEAVE_MCAST commands %v", leaves)
	}
	if err := mc.Leave(); err != nil || len(f.commands(abi.RDMA_USER_CM_CMD_LEAVE_MCAST)) != 1 {
		t.Errorf("second Leave: %v", err)
	}
	// a's Close reconciles events_reported, the multicast event included.
	if err := a.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := b.JoinMulticast(netip.MustParseAddr("10.0.0.1"), JoinFullMember); err == nil {
		t.Error("joined a unicast address")
	}
}
