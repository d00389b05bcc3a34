// Copyright 2026 The rdmago Authors.

package cm

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/uverbs"
)

// TestQPAttrFromABI converts what INIT_QP_ATTR returned for an RC RTR in
// the lab (mask STATE|AV|PATH_MTU|RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|
// DEST_QPN) field by field.
func TestQPAttrFromABI(t *testing.T) {
	a := abi.QPAttr{
		QPAttrMask: abi.IB_QP_STATE | abi.IB_QP_AV | abi.IB_QP_PATH_MTU | abi.IB_QP_RQ_PSN | abi.IB_QP_MIN_RNR_TIMER |
			abi.IB_QP_MAX_DEST_RD_ATOMIC | abi.IB_QP_DEST_QPN,
		QPState: abi.IB_QPS_RTR, PathMTU: abi.IB_MTU_1024, RqPSN: 0xddaf47, DestQPNum: 0x12,
		MaxDestRdAtomic: 128, MinRnrTimer: 12, PortNum: 1, Timeout: 19, RetryCnt: 7, RnrRetry: 7, Qkey: 5,
		QPAccessFlags: abi.IB_UVERBS_ACCESS_REMOTE_WRITE,
	}
	gid := netip.MustParseAddr("::ffff:10.77.0.1").As16()
	a.AHAttr = abi.AHAttr{GRH: abi.GlobalRoute{DGID: gid, FlowLabel: 9, SGIDIndex: 1, HopLimit: 64, TrafficClass: 0x20},
		SL: 2, IsGlobal: 1, PortNum: 1, StaticRate: 3}
	q, mask, err := qpAttrFromABI(&a)
	if err != nil {
		t.Fatal(err)
	}
	want := uverbs.QPAttr{
		State: uverbs.QPSRTR, PathMTU: uverbs.MTU1024, RQPSN: 0xddaf47, DestQPN: 0x12, MaxDestRdAtomic: 128,
		MinRNRTimer: 12, Port: 1, Timeout: 19, RetryCnt: 7, RNRRetry: 7, QKey: 5, AccessFlags: uverbs.AccessRemoteWrite,
		AH: uverbs.AHAttr{GRH: uverbs.GlobalRoute{DGID: uverbs.GID(gid), FlowLabel: 9, SGIDIndex: 1, HopLimit: 64, TrafficClass: 0x20},
			SL: 2, IsGlobal: true, Port: 1, StaticRate: 3},
	}
	if q != want {
		t.Fatalf("got  %+v\nwant %+v", q, want)
	}
	if mask != uverbs.QPAttrMask(a.QPAttrMask) {
		t.Fatalf("mask %#x", mask)
	}
	if s := maskString(mask); s != "STATE|AV|PATH_MTU|RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|DEST_QPN" {
		t.Fatalf("mask string %q", s)
	}
	// Bits above DEST_QPN (kernel-internal RoCE bits older kernels leaked)
	// are dropped, as librdmacm drops them.
	a.QPAttrMask |= 1 << 22
	if _, mask, _ := qpAttrFromABI(&a); mask&(1<<22) != 0 {
		t.Fatal("bit 22 passed to MODIFY_QP")
	}
	// Alternate paths cannot be carried: a clear error, not a silent loss.
	a.QPAttrMask |= abi.IB_QP_ALT_PATH
	if _, _, err := qpAttrFromABI(&a); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("alternate path: %v", err)
	}
}

func TestGUIDString(t *testing.T) {
	if s := sysfs.GUID(0xcc0888fffe0fd23b).String(); s != "cc08:88ff:fe0f:d23b" {
		t.Fatal(s)
	}
	if v := beToHost64(0x3bd20ffeff8808cc); v != 0xcc0888fffe0fd23b {
		t.Fatalf("%#x", v)
	}
}

func TestOptions(t *testing.T) {
	o := (*Options)(nil).withDefaults()
	if o.SendDepth != 16 || o.RecvDepth != 16 || o.MaxSendSGE != 1 || o.CloseTimeout == 0 {
		t.Fatalf("defaults %+v", o)
	}
	if retryValue(0) != 7 || retryValue(NoRetry) != 0 || retryValue(3) != 3 {
		t.Fatal("retry values")
	}
	for _, bad := range []Options{{RetryCount: 8}, {RNRRetryCount: -2}, {InitiatorDepth: 256}, {ResponderResources: -1},
		{SendCQ: &uverbs.CQ{}}, {MaxInline: -1}, {CompChannel: &uverbs.CompChannel{}}, {SendRNRRetry: 8}, {SendRNRRetry: -2}} {
		if err := bad.validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := Dial(context.Background(), "10.0.0.1:1", &Options{PrivateData: make([]byte, 57)}); !errors.Is(err, ErrPrivateDataTooLong) {
		t.Errorf("dial with 57 bytes of private data: %v", err)
	}
	if _, err := DialUD(context.Background(), "10.0.0.1:1", &Options{PrivateData: make([]byte, 181)}); !errors.Is(err, ErrPrivateDataTooLong) {
		t.Errorf("UD dial with 181 bytes of private data: %v", err)
	}
	// What the documentation says CompChannel needs is what validate asks.
	if err := (&Options{CompChannel: &uverbs.CompChannel{}}).validate(); err == nil || !strings.Contains(err.Error(), "need Options.PD") {
		t.Errorf("CompChannel without PD: %v, want the PD it needs named", err)
	}
	if _, err := Dial(context.Background(), "10.0.0.1:0", nil); err == nil || !strings.Contains(err.Error(), "non-zero port") {
		t.Errorf("dial to port 0: %v", err)
	}
}

func TestResolveAddrPort(t *testing.T) {
	ctx := context.Background()
	for in, want := range map[string]string{
		"10.0.0.1:7174":          "10.0.0.1:7174",
		":7174":                  "0.0.0.0:7174",
		"[::ffff:10.0.0.1]:7174": "10.0.0.1:7174",
		"[fe80::1%1]:5":          "[fe80::1%1]:5",
	} {
		ap, err := resolveAddrPort(ctx, in)
		if err != nil || ap.String() != want {
			t.Errorf("%q: %v %v, want %s", in, ap, err, want)
		}
	}
	for _, bad := range []string{"10.0.0.1", "10.0.0.1:99999", "10.0.0.1:nosuchservice"} {
		if _, err := resolveAddrPort(ctx, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestEventDecodeUsesThePortSpacesUnion(t *testing.T) {
	var r abi.UCMEventResp
	r.Event = uint32(EventEstablished)
	u := abi.UCMUDParam{QPNum: 0x99, QKey: UDPQKey}
	u.AHAttr.GRH.HopLimit = 64
	u.SetData([]byte("sidr"))
	r.SetUDParam(&u)
	ev := decodeEvent(&r, PortSpaceUDP)
	if ev.UD.QPNum != 0x99 || ev.UD.QKey != UDPQKey || ev.UD.AHAttr.GRH.HopLimit != 64 || string(ev.UD.PrivateData) != "sidr" {
		t.Fatalf("UD event %+v", ev.UD)
	}
	var p abi.UCMConnParam
	p.QPNum, p.InitiatorDepth = 0x42, 3
	p.SetData([]byte("rc"))
	r.SetConnParam(&p)
	ev = decodeEvent(&r, PortSpaceTCP)
	if ev.Param.QPNum != 0x42 || ev.Param.InitiatorDepth != 3 || string(ev.Param.PrivateData) != "rc" {
		t.Fatalf("RC event %+v", ev.Param)
	}
	if ev.String() != "RDMA_CM_EVENT_ESTABLISHED" {
		t.Fatal(ev.String())
	}
}

// Listen checks PrivateData's size before it opens anything (no RDMA
// device is needed to fail), naming the listener's address; before, the
// listener started and every accept failed, each peer seeing only
// "REJECTED, reason 28".
func TestListenChecksPrivateData(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		listen func(context.Context, string, *Options) (*Listener, error)
		max    int
	}{{"Listen", Listen, 196}, {"ListenUD", ListenUD, 136}} {
		l, err := tc.listen(ctx, "10.0.0.1:7174", &Options{PrivateData: make([]byte, tc.max+1)})
		if err == nil {
			l.Close()
			t.Fatalf("%s with %d bytes of private data succeeded", tc.name, tc.max+1)
		}
		if !errors.Is(err, ErrPrivateDataTooLong) || !strings.Contains(err.Error(), "10.0.0.1:7174") || !strings.Contains(err.Error(), "at most") {
			t.Errorf("%s with %d bytes of private data: %v, want ErrPrivateDataTooLong naming the address and the limit", tc.name, tc.max+1, err)
		}
	}
}
