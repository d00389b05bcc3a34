// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/uverbs"
)

// TestShowFixtures renders each lab-captured tree with sysfs alone (no
// netlink, no uverbs) and compares it, field by field, with ibv_devinfo and
// ibv_devinfo -v captured in the same boot.
func TestShowFixtures(t *testing.T) {
	for _, name := range labFixtures(t) {
		t.Run(name, func(t *testing.T) {
			root := fixtureRoot(t, name)
			// The fixture keeps eight GID slots; ibv_devinfo saw the
			// whole table.
			b, _ := os.ReadFile(filepath.Join(root, "sys/class/infiniband/rxe0/ports/1/gid_tbl_len.capture"))
			tbl := strings.TrimSpace(string(b))
			s := &System{FS: sysfs.New(root)}
			infos, err := s.Show("")
			if err != nil {
				t.Fatal(err)
			}
			if len(infos) != 1 || infos[0].Netdevs[0] != "v0" {
				t.Fatalf("infos %+v", infos)
			}
			for _, verbose := range []bool{false, true} {
				var buf bytes.Buffer
				WriteShow(&buf, infos, verbose)
				ours := strings.Replace(buf.String(), "gid_tbl_len:\t\t8", "gid_tbl_len:\t\t"+tbl, 1)
				file := "ibv_devinfo.txt"
				if verbose {
					file = "ibv_devinfo-v.txt"
				}
				ref, err := os.ReadFile(filepath.Join("testdata", name, file))
				if err != nil {
					t.Fatal(err)
				}
				absent := maps.Clone(absentWithoutVerbs)
				// Without netlink the capability flags are unknown too.
				absent["device_cap_flags"], absent["device_cap_flags names"] = true, true
				n := compareDevinfo(t, ours, string(ref), absent)
				t.Logf("verbose=%v: %d fields agree with %s", verbose, n, file)
				if verbose && n < 15 {
					t.Errorf("only %d fields compared", n)
				}
			}
		})
	}
}

func TestKV(t *testing.T) {
	var b bytes.Buffer
	kv(&b, 1, "transport", 40, "x")
	kv(&b, 1, "max_total_mcast_qp_attach", 40, "y")
	kv(&b, 3, "state", 48, "z")
	kv(&b, 3, "port_cap_flags2", 48, "w")
	kv(&b, 0, "hca_id", 8, "rxe0")
	want := "\ttransport:\t\t\tx\n\tmax_total_mcast_qp_attach:\ty\n\t\t\tstate:\t\t\tz\n\t\t\tport_cap_flags2:\tw\nhca_id:\trxe0\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

func TestDecoders(t *testing.T) {
	names, unknown := DeviceCapNames(0x01223c76 | 1<<30)
	if strings.Join(names, ",") != "BAD_PKEY_CNTR,BAD_QKEY_CNTR,AUTO_PATH_MIG,CHANGE_PHY_PORT,UD_AV_PORT_ENFORCE,PORT_ACTIVE_EVENT,SYS_IMAGE_GUID,RC_RNR_NAK_GEN,SRQ_RESIZE,MEM_WINDOW,MEM_MGT_EXTENSIONS,MEM_WINDOW_TYPE_2B" || unknown != 1<<30 {
		t.Errorf("cap names %v unknown %#x", names, unknown)
	}
	for rate, want := range map[string][2]int{"10 Gb/sec (1X FDR10)": {1, 8}, "2.5 Gb/sec (1X)": {1, 1},
		"100 Gb/sec (4X EDR)": {2, 32}, "56 Gb/sec (4X FDR)": {2, 16}} {
		w, s, ok := ParseRate(rate)
		if !ok || w != want[0] || s != want[1] {
			t.Errorf("%q: %d %d %v", rate, w, s, ok)
		}
	}
	if _, _, ok := ParseRate("fast"); ok {
		t.Error("a rate without (WIDTH SPEED) was accepted")
	}
	// rxe_set_mtu turns "below 256" into IB_MTU_256: a 300-byte netdev
	// gives 256, as the lab's device reports (TestLabDiagnoseSmallMTU).
	for mtu, want := range map[int]int{1500: 1024, 9000: 4096, 1100: 512, 1104: 1024, 300: 256, 68: 256, 591: 256, 592: 512,
		4176: 4096, 4175: 2048} {
		if got := uverbs.MTU(RXEActiveMTU(mtu)).Bytes(); got != want {
			t.Errorf("netdev MTU %d: active %d, want %d", mtu, got, want)
		}
	}
	for mtu, want := range map[int]int{1500: 1024, 9000: 4096, 300: 0, 351: 0, 352: 256, 607: 256, 608: 512, 1119: 512,
		1120: 1024, 4192: 4096} {
		if got := uverbs.MTU(RoCERouteMTU(mtu)).Bytes(); got != want {
			t.Errorf("netdev MTU %d: rdma_cm path MTU %d, want %d", mtu, got, want)
		}
	}
	if got := FWString(0x100020003); got != "1.2.3" {
		t.Errorf("fw %s, want 1.2.3", got)
	}
}

func TestDevicesFixtures(t *testing.T) {
	for _, name := range labFixtures(t) {
		t.Run(name, func(t *testing.T) {
			s := &System{FS: sysfs.New(fixtureRoot(t, name))}
			devs, err := s.Devices()
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			WriteDevices(&buf, devs)
			ref, err := os.ReadFile(filepath.Join("testdata", name, "ibv_devices.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != string(ref) {
				t.Errorf("ours:\n%s\nibv_devices:\n%s", buf.String(), ref)
			}
		})
	}
}

func TestRates(t *testing.T) {
	prev := []Counter{{Dev: "rxe0", Port: 1, Kind: "hw", Name: "sent_pkts", Value: 100},
		{Dev: "rxe0", Port: 1, Kind: "hw", Name: "rcvd_pkts", Value: 50}}
	cur := []Counter{{Dev: "rxe0", Port: 1, Kind: "hw", Name: "sent_pkts", Value: 300},
		{Dev: "rxe0", Port: 1, Kind: "hw", Name: "rcvd_pkts", Value: 10},
		{Dev: "rxe0", Port: 1, Kind: "hw", Name: "new", Value: 7}}
	got := Rates(prev, cur, 2*time.Second)
	if got[0].Rate != 100 || got[1].Rate != 0 || got[2].Rate != 0 || got[0].Value != 300 {
		t.Errorf("rates %+v", got)
	}
	if cur[0].Rate != 0 {
		t.Error("Rates changed its input")
	}
	var buf bytes.Buffer
	WriteCounters(&buf, got, true)
	if !strings.Contains(buf.String(), "sent_pkts  300    100.0") {
		t.Errorf("table:\n%s", buf.String())
	}
}

func TestCountersFixtures(t *testing.T) {
	for _, name := range labFixtures(t) {
		t.Run(name, func(t *testing.T) {
			s := &System{FS: sysfs.New(fixtureRoot(t, name))}
			cs, err := s.Counters("")
			if err != nil {
				t.Fatal(err)
			}
			names, _ := os.ReadDir(filepath.Join("../../internal/sysfs/testdata", name, "sys/class/infiniband/rxe0/ports/1/hw_counters"))
			if len(cs) != len(names) || len(cs) < 10 {
				t.Fatalf("%d counters, the capture has %d files", len(cs), len(names))
			}
			for i, c := range cs {
				if c.Kind != "hw" || c.Dev != "rxe0" || c.Port != 1 || (i > 0 && cs[i-1].Name >= c.Name) {
					t.Errorf("counter %d: %+v", i, c)
				}
			}
			if _, err := s.Counters("nope"); err == nil {
				t.Error("counters of a missing device")
			}
		})
	}
}

// TestShowVerboseWithVerbs renders each lab capture with uverbs attributes
// taken from the numbers its ibv_devinfo -v printed, and checks that
// rdmainfo formats every one of them as ibv_devinfo does, leaves out none
// of ibv_devinfo -v's lines, and prints the lines in ibv_devinfo's order.
func TestShowVerboseWithVerbs(t *testing.T) {
	for _, name := range labFixtures(t) {
		t.Run(name, func(t *testing.T) {
			ref, err := os.ReadFile(filepath.Join("testdata", name, "ibv_devinfo-v.txt"))
			if err != nil {
				t.Fatal(err)
			}
			dumps, err := parseDevinfo(string(ref))
			if err != nil || len(dumps) != 1 {
				t.Fatalf("ibv_devinfo -v: %d devices, %v", len(dumps), err)
			}
			s := &System{FS: sysfs.New(fixtureRoot(t, name)), Verbs: fixedVerbs{verbsFromDump(t, dumps[0])}}
			infos, err := s.Show("")
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			WriteShow(&buf, infos, true)
			n := compareDevinfo(t, buf.String(), string(ref), nil)
			if n < 60 {
				t.Errorf("only %d fields compared", n)
			}
			ours, theirs := keyOrder(buf.String()), keyOrder(string(ref))
			if o, r := strings.Join(common(ours, theirs), " "), strings.Join(common(theirs, ours), " "); o != r {
				t.Errorf("line order differs\nrdmainfo:    %s\nibv_devinfo: %s", o, r)
			}
			if t.Failed() {
				t.Logf("rdmainfo:\n%s", buf.String())
			}
		})
	}
}

type fixedVerbs struct{ v VerbsInfo }

func (f fixedVerbs) Query(string) (VerbsInfo, error) { return f.v, nil }

// verbsFromDump builds the uverbs answer from the numbers of an ibv_devinfo
// dump: "0x1f", "42", or the code in parentheses ("PORT_ACTIVE (4)").
func verbsFromDump(t *testing.T, d devinfoDump) VerbsInfo {
	t.Helper()
	num := func(m map[string]string, k string) uint64 {
		t.Helper()
		v, ok := m[k]
		if !ok {
			t.Fatalf("ibv_devinfo printed no %s", k)
		}
		if i := strings.LastIndexByte(v, '('); i >= 0 {
			v = strings.TrimSuffix(v[i+1:], ")")
		}
		n, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			t.Fatalf("%s = %q: %v", k, m[k], err)
		}
		return n
	}
	f := d.Fields
	i := func(k string) int { return int(num(f, k)) }
	a := DeviceAttr{
		VendorID: uint32(num(f, "vendor_id")), VendorPartID: uint32(num(f, "vendor_part_id")),
		HWVer: uint32(num(f, "hw_ver")), PhysPortCnt: i("phys_port_cnt"), MaxMRSize: num(f, "max_mr_size"),
		PageSizeCap: num(f, "page_size_cap"), MaxQP: i("max_qp"), MaxQPWR: i("max_qp_wr"),
		DeviceCapFlags: uint32(num(f, "device_cap_flags")), MaxSGE: i("max_sge"), MaxSGERD: i("max_sge_rd"),
		MaxCQ: i("max_cq"), MaxCQE: i("max_cqe"), MaxMR: i("max_mr"), MaxPD: i("max_pd"),
		MaxQPRdAtom: i("max_qp_rd_atom"), MaxEERdAtom: i("max_ee_rd_atom"), MaxResRdAtom: i("max_res_rd_atom"),
		MaxQPInitRdAtom: i("max_qp_init_rd_atom"), MaxEEInitRdAtom: i("max_ee_init_rd_atom"),
		AtomicCap: uint32(num(f, "atomic_cap")), MaxEE: i("max_ee"), MaxRDD: i("max_rdd"), MaxMW: i("max_mw"),
		MaxRawIPv6QP: i("max_raw_ipv6_qp"), MaxRawEthyQP: i("max_raw_ethy_qp"), MaxMcastGrp: i("max_mcast_grp"),
		MaxMcastQPAttach: i("max_mcast_qp_attach"), MaxTotalMcastQPAttach: i("max_total_mcast_qp_attach"),
		MaxAH: i("max_ah"), MaxFMR: i("max_fmr"), MaxSRQ: i("max_srq"), MaxSRQWR: i("max_srq_wr"),
		MaxSRQSGE: i("max_srq_sge"), MaxPKeys: i("max_pkeys"), LocalCAAckDelay: uint8(num(f, "local_ca_ack_delay")),
	}
	// The -v lines of ibv_query_device_ex, as rxe has them: flag names,
	// "not supported" remarks and zeros.
	a.DeviceCapFlagsEx = num(f, "device_cap_flags_ex")
	a.MaxWQTypeRQ = uint32(num(f, "max_wq_type_rq"))
	a.MaxRWQIndirectionTables = uint32(num(f, "rss_caps.max_rwq_indirection_tables"))
	a.MaxRWQIndirectionTableSize = uint32(num(f, "rss_caps.max_rwq_indirection_table_size"))
	for _, k := range []string{"rc_odp_caps names", "uc_odp_caps names", "ud_odp_caps names", "xrc_odp_caps names"} {
		if f[k] != "NO SUPPORT" {
			t.Fatalf("%s = %q: the fixture's device has ODP; teach verbsFromDump its names", k, f[k])
		}
	}
	for _, k := range []string{"completion_timestamp_mask not supported", "core clock not supported", "tag matching not supported"} {
		if _, ok := f[k]; !ok {
			t.Fatalf("ibv_devinfo -v did not print %q", k)
		}
	}
	v := VerbsInfo{Device: a, NumCompVectors: i("num_comp_vectors")}
	for pi, p := range d.Ports {
		u8 := func(k string) uint8 { return uint8(num(p, k)) }
		v.Ports = append(v.Ports, PortAttr{
			Port: pi + 1, State: u8("state"), MaxMTU: u8("max_mtu"), ActiveMTU: u8("active_mtu"),
			GIDTblLen: int(num(p, "gid_tbl_len")), PortCapFlags: uint32(num(p, "port_cap_flags")),
			PortCapFlags2: uint16(num(p, "port_cap_flags2")), MaxMsgSz: uint32(num(p, "max_msg_sz")),
			MaxVLNum: u8("max_vl_num"), BadPKeyCntr: uint32(num(p, "bad_pkey_cntr")),
			QKeyViolCntr: uint32(num(p, "qkey_viol_cntr")), PKeyTblLen: int(num(p, "pkey_tbl_len")),
			SubnetTimeout: u8("subnet_timeout"), InitTypeReply: u8("init_type_reply"),
			LID: uint16(num(p, "port_lid")), SMLID: uint16(num(p, "sm_lid")), LMC: u8("port_lmc"),
			ActiveWidth: u8("active_width"), ActiveSpeed: u8("active_speed"), PhysState: u8("phys_state"),
			LinkLayer: 2,
		})
	}
	return v
}

// keyOrder lists the keys of an ibv_devinfo-style dump in the order printed.
func keyOrder(text string) []string {
	var keys []string
	for _, l := range strings.Split(text, "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// common returns the elements of a that b contains, in a's order.
func common(a, b []string) []string {
	in := map[string]bool{}
	for _, k := range b {
		in[k] = true
	}
	var out []string
	for _, k := range a {
		if in[k] {
			out = append(out, k)
		}
	}
	return out
}

// TestResourcesBadKind: an unknown kind is refused whether or not there are
// devices to list.
func TestResourcesBadKind(t *testing.T) {
	for _, devs := range [][]rdmanl.Device{nil, {{Index: 1, Name: "rxe0"}}} {
		s := &System{NL: &fakeNL{devs: devs}}
		if _, err := s.Resources("bogus", ""); err == nil || !strings.Contains(err.Error(), `resource kind "bogus"`) {
			t.Errorf("%d devices: kind bogus gave %v", len(devs), err)
		}
	}
}

// TestWriteResourcesText checks the text of `rdmainfo resources KIND`
// against what iproute2's rdma/res-*.c prints for the same attributes:
// print_key's 0x, print_on_off's adaptive-moderation on/off, the runs of an
// SRQ's QPs, and pd's key order (users before unsafe_global_rkey).
func TestWriteResourcesText(t *testing.T) {
	mr := rdmanl.MR{DevIndex: 1, DevName: "rxe0", RKey: 0x1a2b, LKey: 0x1a2b, IOVA: 0x7f0000001000, Len: 4096, MRN: 3, PDN: 2, ResOwner: rdmanl.ResOwner{PID: 77}}
	pd := rdmanl.PD{DevIndex: 1, DevName: "rxe0", LocalDMALKey: 0x10, UnsafeGlobalRKey: 0x99, Users: 2, PDN: 1, ResOwner: rdmanl.ResOwner{KernName: "ib_core"}}
	cqs := []rdmanl.CQ{
		{DevIndex: 1, DevName: "rxe0", CQE: 63, Users: 1, CQN: 4, CtxN: 1, HasDIM: true, ResOwner: rdmanl.ResOwner{PID: 77}},
		{DevIndex: 1, DevName: "rxe0", CQE: 127, Users: 2, CQN: 5, PollCtx: 2, HasPollCtx: true, DIM: true, HasDIM: true, ResOwner: rdmanl.ResOwner{KernName: "ib_core"}},
	}
	srq := rdmanl.SRQ{DevIndex: 1, DevName: "rxe0", SRQN: 1, PDN: 2, QPs: []rdmanl.QPRange{{Min: 17, Max: 17}, {Min: 18, Max: 20}}, ResOwner: rdmanl.ResOwner{PID: 77}}
	qps := []rdmanl.QP{{DevIndex: 1, DevName: "rxe0", LQPN: 17, Type: 2, PDN: 2, ResOwner: rdmanl.ResOwner{PID: 77}},
		{DevIndex: 1, DevName: "rxe0", Port: 1, LQPN: 1, Type: 1, State: 3, ResOwner: rdmanl.ResOwner{KernName: "ib_core"}}}
	nl := &resNL{fakeNL: fakeNL{devs: []rdmanl.Device{{Index: 1, Name: "rxe0"}}}, mrs: []rdmanl.MR{mr}, pds: []rdmanl.PD{pd}, cqs: cqs,
		srqs: []rdmanl.SRQ{srq}, qps: qps}
	root := t.TempDir()
	writeFile(t, root, "proc/77/comm", "holder\n")
	s := &System{FS: sysfs.New(root), NL: nl}
	for kind, want := range map[string]string{
		"mr": "dev rxe0 mrn 3 rkey 0x1a2b lkey 0x1a2b iova 0x7f0000001000 mrlen 4096 pdn 2 pid 77 comm holder\n",
		"pd": "dev rxe0 pdn 1 local_dma_lkey 0x10 users 2 unsafe_global_rkey 0x99 comm [ib_core]\n",
		"cq": "dev rxe0 cqn 4 cqe 63 users 1 adaptive-moderation off ctxn 1 pid 77 comm holder\n" +
			"dev rxe0 cqn 5 cqe 127 users 2 poll-ctx WORKQUEUE adaptive-moderation on comm [ib_core]\n",
		"srq": "dev rxe0 srqn 1 type BASIC lqpn 17,18-20 pdn 2 pid 77 comm holder\n",
		// A QP not yet bound to a port: print_link's "rxe0/-".
		"qp": "link rxe0/- lqpn 17 type RC state RESET sq-psn 0 pdn 2 pid 77 comm holder\n" +
			"link rxe0/1 lqpn 1 type GSI state RTS sq-psn 0 comm [ib_core]\n",
	} {
		rs, err := s.Resources(kind, "")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		WriteResources(&buf, kind, rs)
		if buf.String() != want {
			t.Errorf("resources %s:\n got %q\nwant %q", kind, buf.String(), want)
		}
	}
	// JSON keeps iproute2's -j shapes: hex digits without 0x, a bool, the
	// QP runs as strings.
	rs, _ := s.Resources("srq", "")
	if got, _ := json.Marshal(rs); string(got) != `[{"comm":"holder","ifindex":1,"ifname":"rxe0","lqpn":["17","18-20"],"pdn":2,"pid":77,"srqn":1,"type":"BASIC"}]` {
		t.Errorf("srq JSON %s", got)
	}
	rs, _ = s.Resources("mr", "")
	if rs[0]["rkey"] != "1a2b" {
		t.Errorf("mr JSON rkey %v, want 1a2b as rdma -j prints it", rs[0]["rkey"])
	}
}

// resNL is a fakeNL that lists objects.
type resNL struct {
	fakeNL
	mrs  []rdmanl.MR
	pds  []rdmanl.PD
	cqs  []rdmanl.CQ
	srqs []rdmanl.SRQ
	qps  []rdmanl.QP
}

func (f *resNL) QPs(uint32) ([]rdmanl.QP, error) { return f.qps, nil }

func (f *resNL) MRs(uint32) ([]rdmanl.MR, error)   { return f.mrs, nil }
func (f *resNL) PDs(uint32) ([]rdmanl.PD, error)   { return f.pds, nil }
func (f *resNL) CQs(uint32) ([]rdmanl.CQ, error)   { return f.cqs, nil }
func (f *resNL) SRQs(uint32) ([]rdmanl.SRQ, error) { return f.srqs, nil }

// TestShowODPCaps: a device that pages on demand (rxe since the kernels
// after 6.12) shows its general and per-transport ODP caps by name, as
// ibv_devinfo -v does.
func TestShowODPCaps(t *testing.T) {
	var buf bytes.Buffer
	writeDeviceAttrsEx(&buf, DeviceAttr{ODPGeneralCaps: 1, RCODPCaps: 0xff, UDODPCaps: 0x23}, 40)
	want := "\tgeneral_odp_caps:\n\t\t\t\t\tODP_SUPPORT\n" +
		"\trc_odp_caps:\n\t\t\t\t\tSUPPORT_SEND\n\t\t\t\t\tSUPPORT_RECV\n\t\t\t\t\tSUPPORT_WRITE\n\t\t\t\t\tSUPPORT_READ\n" +
		"\t\t\t\t\tSUPPORT_ATOMIC\n\t\t\t\t\tSUPPORT_SRQ\n\t\t\t\t\tSUPPORT_FLUSH\n\t\t\t\t\tSUPPORT_ATOMIC_WRITE\n" +
		"\tuc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n" +
		"\tud_odp_caps:\n\t\t\t\t\tSUPPORT_SEND\n\t\t\t\t\tSUPPORT_RECV\n\t\t\t\t\tSUPPORT_SRQ\n" +
		"\txrc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n"
	if got := buf.String(); !strings.HasPrefix(got, want) {
		t.Errorf("got\n%s\nwant it to start with\n%s", got, want)
	}
}
