// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/sys"
	"github.com/rdmago/rdmago/uverbs/internal/rxe"
)

// QPCap is struct ibv_qp_cap: the sizes of a QP's queues.
type QPCap struct {
	MaxSendWR     int
	MaxRecvWR     int
	MaxSendSGE    int
	MaxRecvSGE    int
	MaxInlineData int
}

// QPInitAttr is struct ibv_qp_init_attr.
type QPInitAttr struct {
	Type   QPType
	SendCQ *CQ
	RecvCQ *CQ
	SRQ    *SRQ // receives come from this SRQ; Cap.MaxRecvWR/SGE are ignored
	Cap    QPCap
	// SigAll makes every send generate a completion (sq_sig_all), whatever
	// its SendSignaled flag.
	SigAll bool
}

// QP is a queue pair (struct ibv_qp). Its send and receive rings are mapped
// from the kernel: PostRecv writes the receive ring only, PostSend writes the
// send ring and then rings the doorbell with one write(2) of a preallocated
// POST_SEND command carrying no work request. One goroutine may post sends and
// one receives at a time; Modify, Query and Close are safe anywhere, Close
// also while a post is running (it waits for the post to leave the rings and
// the doorbell, and later posts fail with ErrClosed). The caller must Close it
// before its CQs, SRQ and PD.
//
// Once the QP or its Context is closed, every method that would reach the
// kernel or the rings fails with ErrClosed: the kernel hands the QP's handle
// to the next object created, and a stale handle would modify or query that
// one. Accessors (Num, Type, Cap, State, ...) keep answering.
type QP struct {
	ctx    *Context
	pd     *PD
	handle uint32
	num    uint32
	typ    QPType
	uh     uint64
	sendCQ *CQ
	recvCQ *CQ
	srq    *SRQ
	cap    QPCap
	sigAll bool

	sq    rxe.SendQueue
	rq    rxe.RecvQueue // Q is nil with an SRQ
	sqMem []byte
	rqMem []byte

	fd        int
	db        *doorbell
	pin       *runtime.Pinner
	ring      func() error // rings the doorbell; tests replace it
	doorbells atomic.Uint64
	state     atomic.Uint32 // QPState as last set by Modify

	flushOK       bool
	atomicWriteOK bool

	mu     sync.RWMutex // read-held by commands naming the handle, held by Close
	closed atomic.Bool  // set under mu; read without it on the data path's error paths
	gate   dataGate     // PostSend and PostRecv inside; Close shuts it first
}

// doorbell is the POST_SEND command rxe's provider writes after filling the
// send ring (rdma-core's post_send_db): no work requests, wqe_size at least
// sizeof(ib_uverbs_send_wr), and a response word the kernel writes. It is
// allocated once per QP and pinned.
type doorbell struct {
	req struct {
		hdr abi.CmdHdr
		cmd abi.PostSend
	}
	resp abi.PostSendResp
	_    [4]byte
}

// CreateQP is ibv_create_qp. The kernel may enlarge the requested capacities;
// Cap reports what it granted.
func (pd *PD) CreateQP(attr QPInitAttr) (*QP, error) {
	c := pd.ctx
	switch attr.Type {
	case QPTypeRC, QPTypeUC, QPTypeUD:
	default:
		return nil, fmt.Errorf("create qp: type %v: Soft-RoCE offers RC, UC and UD: %w", attr.Type, ErrNotSupported)
	}
	if attr.SendCQ == nil || attr.RecvCQ == nil {
		return nil, fmt.Errorf("create qp: SendCQ and RecvCQ are required (they may be the same CQ): %w", syscall.EINVAL)
	}
	if attr.SendCQ.ctx != c || attr.RecvCQ.ctx != c || (attr.SRQ != nil && attr.SRQ.ctx != c) {
		return nil, fmt.Errorf("create qp: CQs and SRQ must come from the PD's Context: %w", syscall.EINVAL)
	}
	// Hold the PD, CQs and SRQ open until the kernel has the QP (which then
	// keeps them from being destroyed): their handles go into the command.
	if err := pd.rlockOpen("create qp: pd"); err != nil {
		return nil, err
	}
	defer pd.mu.RUnlock()
	if err := attr.SendCQ.rlockOpen("create qp: send cq"); err != nil {
		return nil, err
	}
	defer attr.SendCQ.mu.RUnlock()
	if attr.RecvCQ != attr.SendCQ { // a second read lock could deadlock against a waiting Close
		if err := attr.RecvCQ.rlockOpen("create qp: recv cq"); err != nil {
			return nil, err
		}
		defer attr.RecvCQ.mu.RUnlock()
	}
	if attr.SRQ != nil {
		if err := attr.SRQ.rlockOpen("create qp: srq"); err != nil {
			return nil, err
		}
		defer attr.SRQ.mu.RUnlock()
	}
	qp := &QP{ctx: c, pd: pd, typ: attr.Type, sendCQ: attr.SendCQ, recvCQ: attr.RecvCQ, srq: attr.SRQ, sigAll: attr.SigAll}
	uh, err := c.track(kindQP, qp)
	if err != nil {
		return nil, fmt.Errorf("create qp: %w", err)
	}
	qp.uh = uh
	var resp struct {
		core abi.CreateQPResp
		drv  abi.RxeCreateQPResp // provider: rxe returns the rings' mmap cookies
	}
	req := abi.CreateQP{
		Response: abi.PtrU64(unsafe.Pointer(&resp)), UserHandle: uh, PDHandle: pd.handle,
		SendCQHandle: attr.SendCQ.handle, RecvCQHandle: attr.RecvCQ.handle,
		MaxSendWR: uint32(attr.Cap.MaxSendWR), MaxRecvWR: uint32(attr.Cap.MaxRecvWR),
		MaxSendSGE: uint32(attr.Cap.MaxSendSGE), MaxRecvSGE: uint32(attr.Cap.MaxRecvSGE),
		MaxInlineData: uint32(attr.Cap.MaxInlineData), QPType: uint8(attr.Type),
	}
	if attr.SigAll {
		req.SqSigAll = 1
	}
	if attr.SRQ != nil {
		req.IsSRQ, req.SRQHandle = 1, attr.SRQ.handle
		req.MaxRecvWR, req.MaxRecvSGE = 0, 0
	}
	if err := c.write(abi.IB_USER_VERBS_CMD_CREATE_QP, abi.Bytes(&req), unsafe.Pointer(&resp), unsafe.Sizeof(resp)); err != nil {
		c.forget(kindQP, qp, uh)
		return nil, fmt.Errorf("create %v qp (send %d×%d sge, recv %d×%d sge, inline %d): %w", attr.Type,
			attr.Cap.MaxSendWR, attr.Cap.MaxSendSGE, attr.Cap.MaxRecvWR, attr.Cap.MaxRecvSGE, attr.Cap.MaxInlineData, err)
	}
	qp.handle, qp.num = resp.core.QPHandle, resp.core.QPN
	qp.cap = QPCap{
		MaxSendWR: int(resp.core.MaxSendWR), MaxRecvWR: int(resp.core.MaxRecvWR), MaxSendSGE: int(resp.core.MaxSendSGE),
		MaxRecvSGE: int(resp.core.MaxRecvSGE), MaxInlineData: int(resp.core.MaxInlineData),
	}
	if err := qp.setup(&resp.drv); err != nil {
		qp.destroy()
		qp.release()
		c.forget(kindQP, qp, uh)
		return nil, fmt.Errorf("create qp: %w", err)
	}
	return qp, nil
}

// setup maps the rings and prepares the doorbell.
func (qp *QP) setup(drv *abi.RxeCreateQPResp) error {
	c := qp.ctx
	var err error
	if qp.srq == nil {
		if qp.rqMem, err = c.mapQueue(drv.RQMI); err != nil {
			return fmt.Errorf("map receive queue: %w", err)
		}
		q, err := rxe.NewQueue(qp.rqMem)
		if err != nil {
			return fmt.Errorf("receive queue: %w", err)
		}
		qp.rq = rxe.RecvQueue{Q: q, MaxSGE: qp.cap.MaxRecvSGE}
	}
	if qp.sqMem, err = c.mapQueue(drv.SQMI); err != nil {
		return fmt.Errorf("map send queue: %w", err)
	}
	q, err := rxe.NewQueue(qp.sqMem)
	if err != nil {
		return fmt.Errorf("send queue: %w", err)
	}
	qp.sq = rxe.SendQueue{Q: q, MaxSGE: qp.cap.MaxSendSGE, MaxInline: qp.cap.MaxInlineData, UD: qp.typ == QPTypeUD}
	qp.fd = c.fd
	qp.pin = new(runtime.Pinner)
	qp.db = new(doorbell)
	qp.pin.Pin(qp.db)
	c.res.addPin(qp.pin)
	h, err := abi.NewCmdHdr(abi.IB_USER_VERBS_CMD_POST_SEND, int(unsafe.Sizeof(qp.db.req.cmd)), int(unsafe.Sizeof(qp.db.resp)))
	if err != nil {
		return err
	}
	qp.db.req.hdr = h
	qp.db.req.cmd = abi.PostSend{
		Response: abi.PtrU64(unsafe.Pointer(&qp.db.resp)),
		QPHandle: qp.handle,
		WqeSize:  uint32(unsafe.Sizeof(abi.SendWR{})),
	}
	qp.ring = qp.writeDoorbell
	qp.flushOK = c.capsEx&(abi.IB_UVERBS_DEVICE_FLUSH_GLOBAL|abi.IB_UVERBS_DEVICE_FLUSH_PERSISTENT) != 0
	qp.atomicWriteOK = c.capsEx&abi.IB_UVERBS_DEVICE_ATOMIC_WRITE != 0
	return nil
}

// writeDoorbell is the doorbell: one write(2) of the preallocated command,
// made as a raw system call (see sys.RawWrite for why).
func (qp *QP) writeDoorbell() error {
	n, err := sys.RawWrite(qp.fd, abi.Bytes(&qp.db.req))
	qp.doorbells.Add(1)
	if err != nil {
		return err
	}
	if n != int(unsafe.Sizeof(qp.db.req)) {
		return syscall.EIO
	}
	return nil
}

// Num is the QP number peers address (qp_num).
func (qp *QP) Num() uint32 { return qp.num }

// SendsInFlight is the number of send work requests posted and not yet
// completed by the device, signalled or not: the send ring's entries
// between the provider's producer and the kernel's consumer (rxe frees a
// slot when it completes the request, just before it posts the
// completion, if any). It lets a caller that posts unsignalled requests
// learn that they are done without a completion for each. It is 0 for a
// closed QP. C has no counterpart (rdma-core's providers keep the ring's
// state private); it makes no system call.
func (qp *QP) SendsInFlight() int {
	if !qp.gate.enter() {
		return 0
	}
	n := 0
	if qp.sq.Q != nil {
		n = qp.sq.Q.Len()
	}
	qp.gate.exit()
	return n
}

// Type is the QP's transport.
func (qp *QP) Type() QPType { return qp.typ }

// Cap is what the kernel granted at creation.
func (qp *QP) Cap() QPCap { return qp.cap }

// State is the state the QP was last moved to with Modify (the kernel may
// since have moved it to QPSErr on an error; Query asks it).
func (qp *QP) State() QPState { return QPState(qp.state.Load()) }

// Doorbells counts the doorbell write(2) calls made for this QP: one per
// successful PostSend call, whatever the number of work requests in it.
func (qp *QP) Doorbells() uint64 { return qp.doorbells.Load() }

// SendCQ and RecvCQ are the QP's completion queues.
func (qp *QP) SendCQ() *CQ { return qp.sendCQ }

// RecvCQ is the CQ receive completions go to.
func (qp *QP) RecvCQ() *CQ { return qp.recvCQ }

// AHAttr is struct ibv_ah_attr: the address of a remote port. For RoCE it is
// global: IsGlobal set and GRH.DGID the peer's GID; DLID is unused.
type AHAttr struct {
	GRH         GlobalRoute
	DLID        uint16
	SL          uint8
	SrcPathBits uint8
	StaticRate  uint8
	IsGlobal    bool
	Port        uint8
}

// GlobalRoute is struct ibv_global_route.
type GlobalRoute struct {
	DGID         GID
	FlowLabel    uint32
	SGIDIndex    uint8 // the local GID table entry to send from (see GIDForIP)
	HopLimit     uint8
	TrafficClass uint8
}

func (a *AHAttr) dest() abi.QPDest {
	d := abi.QPDest{
		DGID: a.GRH.DGID, FlowLabel: a.GRH.FlowLabel, DLID: a.DLID, SGIDIndex: a.GRH.SGIDIndex,
		HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass, SL: a.SL, SrcPathBits: a.SrcPathBits,
		StaticRate: a.StaticRate, PortNum: a.Port,
	}
	if a.IsGlobal {
		d.IsGlobal = 1
	}
	return d
}

// ahAttrFromABI converts the kernel's struct ib_uverbs_ah_attr — what
// rdma_cm's INIT_QP_ATTR and UD events report — into an AHAttr
// (ibv_copy_ah_attr_from_kern).
func ahAttrFromABI(a *abi.AHAttr) AHAttr {
	return AHAttr{
		GRH: GlobalRoute{DGID: a.GRH.DGID, FlowLabel: a.GRH.FlowLabel, SGIDIndex: a.GRH.SGIDIndex,
			HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass},
		DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate, IsGlobal: a.IsGlobal != 0, Port: a.PortNum,
	}
}

// toABI is the AHAttr as struct ib_uverbs_ah_attr (CREATE_AH).
func (a *AHAttr) toABI() abi.AHAttr {
	r := abi.AHAttr{
		GRH: abi.GlobalRoute{DGID: a.GRH.DGID, FlowLabel: a.GRH.FlowLabel, SGIDIndex: a.GRH.SGIDIndex,
			HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass},
		DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate, PortNum: a.Port,
	}
	if a.IsGlobal {
		r.IsGlobal = 1
	}
	return r
}

func ahFromDest(d *abi.QPDest) AHAttr {
	return AHAttr{
		GRH:  GlobalRoute{DGID: d.DGID, FlowLabel: d.FlowLabel, SGIDIndex: d.SGIDIndex, HopLimit: d.HopLimit, TrafficClass: d.TrafficClass},
		DLID: d.DLID, SL: d.SL, SrcPathBits: d.SrcPathBits, StaticRate: d.StaticRate, IsGlobal: d.IsGlobal != 0, Port: d.PortNum,
	}
}

// QPAttr is struct ibv_qp_attr: Modify applies the fields a QPAttrMask names;
// Query fills them all.
type QPAttr struct {
	State           QPState
	CurState        QPState
	PathMTU         MTU
	QKey            uint32
	RQPSN           uint32
	SQPSN           uint32
	DestQPN         uint32
	AccessFlags     AccessFlags
	PKeyIndex       uint16
	Port            uint8
	AH              AHAttr
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8
	Cap             QPCap // Query only
	SQDraining      bool  // Query only
	SigAll          bool  // Query only
}

// Modify is ibv_modify_qp: it applies the attributes mask selects. The usual
// path is RESET→INIT→RTR→RTS (see ModifyToInit, Connect); moving to QPSErr
// flushes every outstanding work request with IBV_WC_WR_FLUSH_ERR.
func (qp *QP) Modify(attr *QPAttr, mask QPAttrMask) error {
	qp.mu.RLock()
	defer qp.mu.RUnlock()
	if qp.closed.Load() {
		return qp.modifyErr(attr, mask, ErrClosed)
	}
	req := abi.ModifyQP{
		Dest: attr.AH.dest(), QPHandle: qp.handle, AttrMask: uint32(mask), Qkey: attr.QKey,
		RqPSN: attr.RQPSN, SqPSN: attr.SQPSN, DestQPNum: attr.DestQPN, QPAccessFlags: uint32(attr.AccessFlags),
		PkeyIndex: attr.PKeyIndex, QPState: uint8(attr.State), CurQPState: uint8(attr.CurState),
		PathMTU: uint8(attr.PathMTU), MaxRdAtomic: attr.MaxRdAtomic, MaxDestRdAtomic: attr.MaxDestRdAtomic,
		MinRnrTimer: attr.MinRNRTimer, PortNum: attr.Port, Timeout: attr.Timeout, RetryCnt: attr.RetryCnt,
		RnrRetry: attr.RNRRetry,
	}
	if err := qp.ctx.write(abi.IB_USER_VERBS_CMD_MODIFY_QP, abi.Bytes(&req), nil, 0); err != nil {
		return qp.modifyErr(attr, mask, err)
	}
	if mask&QPAttrState != 0 {
		qp.state.Store(uint32(attr.State))
	}
	return nil
}

func (qp *QP) modifyErr(attr *QPAttr, mask QPAttrMask, err error) error {
	if mask&QPAttrState != 0 {
		return fmt.Errorf("modify qp %#x to %v: %w", qp.num, attr.State, err)
	}
	return fmt.Errorf("modify qp %#x: %w", qp.num, err)
}

// Query is ibv_query_qp: the QP's current attributes as the kernel sees them.
func (qp *QP) Query() (QPAttr, error) {
	qp.mu.RLock()
	defer qp.mu.RUnlock()
	if qp.closed.Load() {
		return QPAttr{}, fmt.Errorf("query qp %#x: %w", qp.num, ErrClosed)
	}
	resp := new(abi.QueryQPResp)
	req := abi.QueryQP{Response: abi.PtrU64(unsafe.Pointer(resp)), QPHandle: qp.handle, AttrMask: ^uint32(0)}
	if err := qp.ctx.write(abi.IB_USER_VERBS_CMD_QUERY_QP, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		return QPAttr{}, fmt.Errorf("query qp %#x: %w", qp.num, err)
	}
	r := resp
	return QPAttr{
		State: QPState(r.QPState), CurState: QPState(r.CurQPState), PathMTU: MTU(r.PathMTU), QKey: r.Qkey,
		RQPSN: r.RqPSN, SQPSN: r.SqPSN, DestQPN: r.DestQPNum, AccessFlags: AccessFlags(r.QPAccessFlags),
		PKeyIndex: r.PkeyIndex, Port: r.PortNum, AH: ahFromDest(&r.Dest), MaxRdAtomic: r.MaxRdAtomic,
		MaxDestRdAtomic: r.MaxDestRdAtomic, MinRNRTimer: r.MinRnrTimer, Timeout: r.Timeout, RetryCnt: r.RetryCnt,
		RNRRetry: r.RnrRetry, SQDraining: r.SqDraining != 0, SigAll: r.SqSigAll != 0,
		Cap: QPCap{MaxSendWR: int(r.MaxSendWR), MaxRecvWR: int(r.MaxRecvWR), MaxSendSGE: int(r.MaxSendSGE),
			MaxRecvSGE: int(r.MaxRecvSGE), MaxInlineData: int(r.MaxInlineData)},
	}, nil
}

// ModifyToInit moves a QP from RESET to INIT on port (from 1). access says
// what peers may do to this QP's memory (RC, UC); qkey is UD's queue key.
func (qp *QP) ModifyToInit(port int, access AccessFlags, qkey uint32) error {
	if port < 1 || port > 255 {
		return fmt.Errorf("uverbs: modify qp to init: port %d: want 1-255", port)
	}
	attr := QPAttr{State: QPSInit, Port: uint8(port), AccessFlags: access, QKey: qkey}
	mask := QPAttrState | QPAttrPKeyIndex | QPAttrPort
	if qp.typ == QPTypeUD {
		mask |= QPAttrQKey
	} else {
		mask |= QPAttrAccessFlags
	}
	return qp.Modify(&attr, mask)
}

// Dest is what a connected QP needs to know about its peer; it is what
// ibv_rc_pingpong exchanges over TCP (see package oob).
type Dest struct {
	LID uint16
	QPN uint32
	PSN uint32 // the first packet sequence number the peer sends
	GID GID
}

// ConnectOptions are the path and reliability settings of Connect. Every
// zero field means the default (ibv_rc_pingpong's settings with a 64-hop
// limit); the named constants ask for what a zero would mean in the
// IBA encoding.
type ConnectOptions struct {
	Port            int   // the local port (from 1); 0 means 1
	SGIDIndex       int   // the local GID to send from (GIDForIP); 0 is index 0
	HopLimit        uint8 // 0 means 64
	TrafficClass    uint8 // 0 is traffic class 0
	SL              uint8 // 0 is service level 0
	MTU             MTU   // 0 means MTU1024
	MinRNRTimer     int   // IBA encoding; 0 means 12 (0.64 ms), RNRTimer655ms is the encoding 0
	MaxDestRdAtomic int   // RDMA READ/atomics the peer may have in flight to us; 0 means 1, NoRdAtomic none
	Timeout         int   // 4.096 µs × 2^Timeout; 0 means 14 (about 67 ms), TimeoutInfinite is the encoding 0
	RetryCnt        int   // 0 means 7, NoRetry none
	RNRRetry        int   // 0 means 7 (infinite), NoRetry none
	MaxRdAtomic     int   // RDMA READ/atomics we may have in flight; 0 means 1, NoRdAtomic none
}

// Values of ConnectOptions fields whose IBA encoding is 0, which a zero
// field cannot say (it means the default).
const (
	NoRetry         = -1 // RetryCnt, RNRRetry: never retry (IBA 0)
	NoRdAtomic      = -1 // MaxRdAtomic, MaxDestRdAtomic: no RDMA READ or atomics in flight
	TimeoutInfinite = -1 // Timeout: the IBA's 0, wait forever for an ACK
	RNRTimer655ms   = -1 // MinRNRTimer: the IBA's 0, 655.36 ms
)

// connectValues is ConnectOptions with the defaults filled in and the
// sentinels turned into the IBA's values.
type connectValues struct {
	port, sgidIndex, hopLimit, trafficClass, sl uint8
	mtu                                         MTU
	minRNRTimer, maxDestRdAtomic, timeout       uint8
	retryCnt, rnrRetry, maxRdAtomic             uint8
}

func (o *ConnectOptions) values() (connectValues, error) {
	var c ConnectOptions
	if o != nil {
		c = *o
	}
	v := connectValues{hopLimit: c.HopLimit, trafficClass: c.TrafficClass, sl: c.SL, mtu: c.MTU}
	if v.hopLimit == 0 {
		v.hopLimit = 64
	}
	if v.mtu == 0 {
		v.mtu = MTU1024
	}
	field := func(name string, n, def, max int) (uint8, error) {
		switch {
		case n == 0:
			return uint8(def), nil
		case n == -1:
			return 0, nil
		case n < -1 || n > max:
			return 0, fmt.Errorf("uverbs: ConnectOptions.%s %d: want 0-%d (or -1 for the IBA's 0)", name, n, max)
		}
		return uint8(n), nil
	}
	var err error
	if c.Port < 0 || c.Port > 255 || c.SGIDIndex < 0 || c.SGIDIndex > 255 {
		return v, fmt.Errorf("uverbs: ConnectOptions.Port %d or SGIDIndex %d out of range", c.Port, c.SGIDIndex)
	}
	v.port, v.sgidIndex = uint8(max(c.Port, 1)), uint8(c.SGIDIndex)
	for _, f := range []struct {
		name        string
		n, def, max int
		dst         *uint8
	}{
		{"MinRNRTimer", c.MinRNRTimer, 12, 31, &v.minRNRTimer},
		{"MaxDestRdAtomic", c.MaxDestRdAtomic, 1, 255, &v.maxDestRdAtomic},
		{"Timeout", c.Timeout, 14, 31, &v.timeout},
		{"RetryCnt", c.RetryCnt, 7, 7, &v.retryCnt},
		{"RNRRetry", c.RNRRetry, 7, 7, &v.rnrRetry},
		{"MaxRdAtomic", c.MaxRdAtomic, 1, 255, &v.maxRdAtomic},
	} {
		if *f.dst, err = field(f.name, f.n, f.def, f.max); err != nil {
			return v, err
		}
	}
	return v, nil
}

// Connect moves an INIT QP to RTR and then RTS towards remote, sending from
// sqPSN: for RC and UC the full path (ibv_rc_pingpong's pp_connect_ctx), for
// UD only the states and the send PSN. opts nil means every default.
func (qp *QP) Connect(remote Dest, sqPSN uint32, opts *ConnectOptions) error {
	o, err := opts.values()
	if err != nil {
		return err
	}
	if qp.typ == QPTypeUD {
		if err := qp.Modify(&QPAttr{State: QPSRTR}, QPAttrState); err != nil {
			return err
		}
		return qp.Modify(&QPAttr{State: QPSRTS, SQPSN: sqPSN & 0xffffff}, QPAttrState|QPAttrSQPSN)
	}
	rtr := QPAttr{
		State: QPSRTR, PathMTU: o.mtu, DestQPN: remote.QPN, RQPSN: remote.PSN & 0xffffff,
		MaxDestRdAtomic: o.maxDestRdAtomic, MinRNRTimer: o.minRNRTimer,
		AH: AHAttr{DLID: remote.LID, SL: o.sl, Port: o.port},
	}
	if !remote.GID.IsZero() {
		rtr.AH.IsGlobal = true
		rtr.AH.GRH = GlobalRoute{DGID: remote.GID, SGIDIndex: o.sgidIndex, HopLimit: o.hopLimit, TrafficClass: o.trafficClass}
	}
	mask := QPAttrState | QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN
	if qp.typ == QPTypeRC {
		mask |= QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer
	}
	if err := qp.Modify(&rtr, mask); err != nil {
		return err
	}
	rts := QPAttr{State: QPSRTS, SQPSN: sqPSN & 0xffffff, Timeout: o.timeout, RetryCnt: o.retryCnt, RNRRetry: o.rnrRetry, MaxRdAtomic: o.maxRdAtomic}
	mask = QPAttrState | QPAttrSQPSN
	if qp.typ == QPTypeRC {
		mask |= QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic
	}
	return qp.Modify(&rts, mask)
}

// ModifyToErr moves the QP to the error state: outstanding and later work
// requests complete with IBV_WC_WR_FLUSH_ERR (see WC.IsFlush).
func (qp *QP) ModifyToErr() error { return qp.Modify(&QPAttr{State: QPSErr}, QPAttrState) }

// ModifyToReset moves the QP back to RESET, discarding its queues' contents.
func (qp *QP) ModifyToReset() error { return qp.Modify(&QPAttr{State: QPSReset}, QPAttrState) }

func (qp *QP) destroy() (uint32, error) {
	resp := new(abi.DestroyQPResp)
	req := abi.DestroyQP{Response: abi.PtrU64(unsafe.Pointer(resp)), QPHandle: qp.handle}
	err := qp.ctx.write(abi.IB_USER_VERBS_CMD_DESTROY_QP, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp))
	return resp.EventsReported, err
}

// release unmaps the rings and unpins the doorbell.
func (qp *QP) release() error {
	r := qp.ctx.res
	err1 := r.unmap(qp.sqMem)
	err2 := r.unmap(qp.rqMem)
	qp.sqMem, qp.rqMem = nil, nil
	qp.sq, qp.rq = rxe.SendQueue{}, rxe.RecvQueue{}
	if qp.pin != nil {
		r.unpin(qp.pin)
	}
	if err1 != nil {
		return err1
	}
	return err2
}

// Close is ibv_destroy_qp. Completions of its work requests already in the CQs
// stay there. It may run concurrently with PostSend and PostRecv (see QP). It
// is idempotent.
func (qp *QP) Close() error {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.closed.Load() {
		return nil
	}
	// No post may still be inside: it would write a ring about to be
	// unmapped, or ring the doorbell with a handle the kernel may give to
	// the next QP created.
	qp.gate.shut()
	if _, err := qp.destroy(); err != nil {
		qp.gate.reopen()
		return fmt.Errorf("destroy qp %#x: %w", qp.num, err)
	}
	qp.closed.Store(true)
	err := qp.release()
	qp.ctx.forget(kindQP, qp, qp.uh)
	if err != nil {
		return fmt.Errorf("destroy qp %#x: unmap rings: %w", qp.num, err)
	}
	return nil
}

// Drain is the teardown idiom: it moves the QP to the error state and polls
// its CQs until every work request still in its rings has come back — as a
// flush (IBV_WC_WR_FLUSH_ERR, see WC.IsFlush) or with whatever it completed
// with first — or until ctx is done. It returns the completions polled, which
// include other QPs' if they share the CQs. Nobody else may poll those CQs
// meanwhile. On a closed QP it fails with ErrClosed.
func (qp *QP) Drain(ctx context.Context) ([]WC, error) {
	if err := qp.ModifyToErr(); err != nil {
		return nil, fmt.Errorf("drain: %w", err)
	}
	var out []WC
	buf := make([]WC, 32)
	poll := func() int {
		n := qp.sendCQ.Poll(buf)
		out = append(out, buf[:n]...)
		if qp.recvCQ != qp.sendCQ {
			m := qp.recvCQ.Poll(buf)
			out = append(out, buf[:m]...)
			n += m
		}
		return n
	}
	// The kernel frees a ring slot just before it posts the completion, so
	// once the rings are empty keep polling until the CQs stay quiet briefly.
	var quietSince time.Time
	for {
		n := poll()
		if !qp.gate.enter() {
			return out, fmt.Errorf("drain qp %#x: %w", qp.num, ErrClosed)
		}
		empty := qp.sq.Q == nil || qp.sq.Q.Empty()
		if qp.rq.Q != nil && !qp.rq.Q.Empty() {
			empty = false
		}
		qp.gate.exit()
		switch {
		case !empty || n > 0:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		case time.Since(quietSince) > 5*time.Millisecond:
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("drain qp %#x: %w", qp.num, err)
		}
		if n == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// abandon forgets the rings without system calls; the Context's fd is being
// closed and with it every kernel object (Context.Close shut the gate before
// closing it).
func (qp *QP) abandon() {
	qp.gate.shut()
	qp.mu.Lock()
	qp.closed.Store(true)
	qp.sq, qp.rq = rxe.SendQueue{}, rxe.RecvQueue{}
	qp.sqMem, qp.rqMem = nil, nil
	qp.mu.Unlock()
}

func (qp *QP) dataGate() *dataGate { return &qp.gate }
