// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmago/rdmago/internal/abi"
)

// The data path as the probes see it: the work request a POST_SEND doorbell
// rang for (read from the rxe send ring, Event.WQE) and the completions rxe
// posts (KindCompletion). The names are libibverbs' without the prefix
// (IBV_WR_RDMA_WRITE is "RDMA_WRITE", IBV_WC_WR_FLUSH_ERR "WR_FLUSH_ERR").

var wrOpcodeNames = map[uint32]string{
	abi.IB_WR_RDMA_WRITE: "RDMA_WRITE", abi.IB_WR_RDMA_WRITE_WITH_IMM: "RDMA_WRITE_WITH_IMM",
	abi.IB_WR_SEND: "SEND", abi.IB_WR_SEND_WITH_IMM: "SEND_WITH_IMM", abi.IB_WR_RDMA_READ: "RDMA_READ",
	abi.IB_WR_ATOMIC_CMP_AND_SWP: "ATOMIC_CMP_AND_SWP", abi.IB_WR_ATOMIC_FETCH_AND_ADD: "ATOMIC_FETCH_AND_ADD",
	abi.IB_WR_LOCAL_INV: "LOCAL_INV", abi.IB_WR_BIND_MW: "BIND_MW", abi.IB_WR_SEND_WITH_INV: "SEND_WITH_INV",
	abi.IB_WR_LSO: "TSO", abi.IB_WR_FLUSH: "FLUSH", abi.IB_WR_ATOMIC_WRITE: "ATOMIC_WRITE",
}

var wcOpcodeNames = map[uint32]string{
	abi.IB_WC_SEND: "SEND", abi.IB_WC_RDMA_WRITE: "RDMA_WRITE", abi.IB_WC_RDMA_READ: "RDMA_READ",
	abi.IB_WC_COMP_SWAP: "COMP_SWAP", abi.IB_WC_FETCH_ADD: "FETCH_ADD", abi.IB_WC_BIND_MW: "BIND_MW",
	abi.IB_WC_LOCAL_INV: "LOCAL_INV", abi.IB_WC_LSO: "TSO", abi.IB_WC_FLUSH: "FLUSH",
	abi.IB_WC_ATOMIC_WRITE: "ATOMIC_WRITE", abi.IB_WC_RECV: "RECV", abi.IB_WC_RECV_RDMA_WITH_IMM: "RECV_RDMA_WITH_IMM",
}

var wcStatusNames = map[uint32]string{
	abi.IB_WC_SUCCESS: "SUCCESS", abi.IB_WC_LOC_LEN_ERR: "LOC_LEN_ERR", abi.IB_WC_LOC_QP_OP_ERR: "LOC_QP_OP_ERR",
	abi.IB_WC_LOC_EEC_OP_ERR: "LOC_EEC_OP_ERR", abi.IB_WC_LOC_PROT_ERR: "LOC_PROT_ERR",
	abi.IB_WC_WR_FLUSH_ERR: "WR_FLUSH_ERR", abi.IB_WC_MW_BIND_ERR: "MW_BIND_ERR", abi.IB_WC_BAD_RESP_ERR: "BAD_RESP_ERR",
	abi.IB_WC_LOC_ACCESS_ERR: "LOC_ACCESS_ERR", abi.IB_WC_REM_INV_REQ_ERR: "REM_INV_REQ_ERR",
	abi.IB_WC_REM_ACCESS_ERR: "REM_ACCESS_ERR", abi.IB_WC_REM_OP_ERR: "REM_OP_ERR",
	abi.IB_WC_RETRY_EXC_ERR: "RETRY_EXC_ERR", abi.IB_WC_RNR_RETRY_EXC_ERR: "RNR_RETRY_EXC_ERR",
	abi.IB_WC_LOC_RDD_VIOL_ERR: "LOC_RDD_VIOL_ERR", abi.IB_WC_REM_INV_RD_REQ_ERR: "REM_INV_RD_REQ_ERR",
	abi.IB_WC_REM_ABORT_ERR: "REM_ABORT_ERR", abi.IB_WC_INV_EECN_ERR: "INV_EECN_ERR",
	abi.IB_WC_INV_EEC_STATE_ERR: "INV_EEC_STATE_ERR", abi.IB_WC_FATAL_ERR: "FATAL_ERR",
	abi.IB_WC_RESP_TIMEOUT_ERR: "RESP_TIMEOUT_ERR", abi.IB_WC_GENERAL_ERR: "GENERAL_ERR",
}

func name32(m map[uint32]string, v uint32) string {
	if s, ok := m[v]; ok {
		return s
	}
	return fmt.Sprint(v)
}

// WCFlushed is the status field of a flushed completion (IBV_WC_WR_FLUSH_ERR):
// the QP went to the error state before the request ran, which every orderly
// teardown does to the receives still posted. It is not the error that moved
// the QP there.
const WCFlushed = "WR_FLUSH_ERR"

// describeCompletion decodes a KindCompletion event: "cq COMPLETION
// opcode=RDMA_WRITE status=SUCCESS len=64 qpn=17 wr_id=0x1".
func describeCompletion(d *Description, e Event) {
	d.Subsys, d.Op = "cq", "COMPLETION"
	var wc abi.WC
	if !decode(e.Data, &wc) {
		return
	}
	d.Args = []Field{
		{"opcode", name32(wcOpcodeNames, wc.Opcode)},
		{"status", name32(wcStatusNames, wc.Status)},
		u("len", wc.ByteLen),
		u("qpn", wc.QPNum),
		{"wr_id", fmt.Sprintf("%#x", wc.WrID)},
	}
	if wc.WcFlags&abi.IB_WC_WITH_IMM != 0 {
		d.Args = append(d.Args, Field{"imm", fmt.Sprintf("%#x", binary.BigEndian.Uint32(binary.NativeEndian.AppendUint32(nil, wc.ImmData)))})
	}
	if wc.Status != abi.IB_WC_SUCCESS && wc.VendorErr != 0 {
		d.Args = append(d.Args, u("vendor_err", wc.VendorErr))
	}
	if wc.SrcQP != 0 {
		d.Args = append(d.Args, u("src_qp", wc.SrcQP))
	}
}

// wqeFields decodes the WQE digest of a POST_SEND doorbell (Event.WQE) into
// the fields that replace wr_count=0: the opcode, the length, the remote
// address and key of an RDMA or atomic WR (the remote QPN and Q_Key of a
// UD SEND), whether it asks for a completion, its wr_id and, when the
// doorbell covered more than one WR, how many (the last is shown). prev is
// the producer index seen at this QP's previous doorbell (ok false: none);
// it returns the one after this doorbell.
func wqeFields(w []byte, prev uint32, ok bool) ([]Field, uint32) {
	bo := binary.NativeEndian
	if len(w) < wqeProdOff-wqeDigestOff+4 {
		return nil, prev
	}
	op := bo.Uint32(w[rxeWQEOpcode:])
	flags := bo.Uint32(w[rxeWQESendFlags:])
	un := w[rxeWQEUnion:]
	length := bo.Uint32(w[wqeDMALenOff-wqeDigestOff:])
	prod := bo.Uint32(w[wqeProdOff-wqeDigestOff:])
	fs := []Field{{"wr", name32(wrOpcodeNames, op)}, u("len", length)}
	switch op {
	case abi.IB_WR_RDMA_WRITE, abi.IB_WR_RDMA_WRITE_WITH_IMM, abi.IB_WR_RDMA_READ, abi.IB_WR_ATOMIC_WRITE:
		var r abi.RxeWRRdma
		decode(un, &r)
		fs = append(fs, Field{"va", fmt.Sprintf("%#x", r.RemoteAddr)}, Field{"rkey", fmt.Sprintf("%#x", r.RKey)})
	case abi.IB_WR_ATOMIC_CMP_AND_SWP, abi.IB_WR_ATOMIC_FETCH_AND_ADD:
		var a abi.RxeWRAtomic
		decode(un, &a)
		fs = append(fs, Field{"va", fmt.Sprintf("%#x", a.RemoteAddr)}, Field{"rkey", fmt.Sprintf("%#x", a.RKey)})
	case abi.IB_WR_SEND, abi.IB_WR_SEND_WITH_IMM, abi.IB_WR_SEND_WITH_INV:
		var ud abi.RxeWRUD
		decode(un, &ud)
		if ud.RemoteQPN != 0 { // a UD SEND; on RC and UC these bytes are zero
			fs = append(fs, u("remote_qpn", ud.RemoteQPN), Field{"qkey", fmt.Sprintf("%#x", ud.RemoteQkey)})
		}
	}
	var fl []string
	if flags&abi.IB_SEND_SIGNALED != 0 {
		fl = append(fl, "signaled")
	} else {
		fl = append(fl, "unsignaled")
	}
	for _, x := range []struct {
		bit  uint32
		name string
	}{{abi.IB_SEND_FENCE, "fence"}, {abi.IB_SEND_SOLICITED, "solicited"}, {abi.IB_SEND_INLINE, "inline"}} {
		if flags&x.bit != 0 {
			fl = append(fl, x.name)
		}
	}
	fs = append(fs, Field{"flags", strings.Join(fl, ",")}, Field{"wr_id", fmt.Sprintf("%#x", bo.Uint64(w))})
	if n := prod - prev; ok && n > 1 && n < 1<<20 {
		fs = append(fs, u("posted", n))
	}
	return fs, prod
}

// describeWQE replaces a POST_SEND's wr_count=0 with the work request its
// doorbell rang for (Event.WQE), remembering the ring's producer index per
// QP handle.
func (f *Formatter) describeWQE(d *Description, e Event) {
	q := fieldIndex(d.Args, "qp")
	if q < 0 || e.WQE == nil {
		return
	}
	h, _ := d.Args[q].Val.(uint64)
	k := qpnKey{e.PID, e.Dev, h}
	prev, ok := f.sqProd[k]
	fs, prod := wqeFields(e.WQE, prev, ok)
	if fs == nil {
		return
	}
	if f.sqProd == nil || len(f.sqProd) >= qpnTableMax {
		f.sqProd = map[qpnKey]uint32{}
	}
	f.sqProd[k] = prod
	if i := fieldIndex(d.Args, "wr_count"); i >= 0 {
		d.Args = slices.Delete(d.Args, i, i+1)
	}
	d.Args = append(d.Args, fs...)
}

// completionOwner is the process that created the QP of completion e, if
// the Formatter knows it.
func (f *Formatter) completionOwner(e Event) (QPOwner, bool) {
	var wc abi.WC
	if e.Kind != KindCompletion || !decode(e.Data, &wc) {
		return QPOwner{}, false
	}
	o, ok := f.owners[wc.QPNum]
	return o, ok
}

// attribute gives a completion the QP's owner as its process, when the
// Formatter knows it: rxe posts completions from softirq and work-queue
// context, in whatever task ran there.
func (f *Formatter) attribute(e Event) Event {
	if o, ok := f.completionOwner(e); ok {
		e.PID, e.TID, e.Comm = o.PID, o.PID, o.Comm
	}
	return e
}
