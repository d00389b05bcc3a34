// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"fmt"
)

// WC is struct ibv_wc: one work completion. Its layout is that of struct
// ib_uverbs_wc, the start of every rxe CQ slot, so polling is one copy. When
// Status is not WCSuccess only WRID, Status, QPNum and VendorErr are defined.
type WC struct {
	WRID      uint64   // the ID of the work request
	Status    WCStatus // IBV_WC_SUCCESS or why it failed
	Opcode    WCOpcode // what completed; receives have WCRecv set (undefined unless Status is WCSuccess)
	VendorErr uint32
	// ByteLen is the number of bytes received (receives) or read (RDMA
	// READ). The receive completion of an RDMA WRITE WITH IMM
	// (WCRecvRDMAWithImm) carries the length of the write, whose data went
	// to the address the writer named, not into the receive's SGEs.
	ByteLen uint32
	// Imm is the immediate data in host byte order when Flags has WCWithImm.
	Imm          uint32
	QPNum        uint32 // the local QP
	SrcQP        uint32 // UD receives: the sender's QP number
	Flags        WCFlags
	PKeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
	PortNum      uint8
	_            uint8
}

// IsFlush reports whether the work request was flushed: the QP entered the
// error state (Modify to QPSErr, Close, or an earlier error completion) before
// the request was processed. Flushes are the normal way outstanding requests
// come back at teardown; they carry no data.
func (wc *WC) IsFlush() bool { return wc.Status == WCWRFlushErr }

// Err returns nil for a successful completion and otherwise an error naming
// the request, the status and its explanation.
func (wc *WC) Err() error {
	if wc.Status == WCSuccess {
		return nil
	}
	return &WCError{WC: *wc}
}

// WCError is a failed work completion as an error.
type WCError struct{ WC WC }

func (e *WCError) Error() string {
	return fmt.Sprintf("work request %#x on QP %#x failed: %v: %s", e.WC.WRID, e.WC.QPNum, e.WC.Status, e.WC.Status.Explain())
}

// WCFlags is enum ib_wc_flags as the kernel writes it.
type WCFlags uint32

// Completion flags.
const (
	WCGRH     WCFlags = 0x1 // IB_WC_GRH: a UD receive buffer starts with a 40-byte GRH
	WCWithImm WCFlags = 0x2 // IB_WC_WITH_IMM: Imm is valid
	WCWithInv WCFlags = 0x4 // IB_WC_WITH_INVALIDATE
)

// WCOpcode is enum ibv_wc_opcode.
type WCOpcode uint32

// Completion opcodes.
const (
	WCSend            WCOpcode = 0   // IB_WC_SEND
	WCRDMAWrite       WCOpcode = 1   // IB_WC_RDMA_WRITE
	WCRDMARead        WCOpcode = 2   // IB_WC_RDMA_READ
	WCCompSwap        WCOpcode = 3   // IB_WC_COMP_SWAP
	WCFetchAdd        WCOpcode = 4   // IB_WC_FETCH_ADD
	WCBindMW          WCOpcode = 5   // IB_WC_BIND_MW
	WCLocalInv        WCOpcode = 6   // IB_WC_LOCAL_INV
	WCFlush           WCOpcode = 8   // IB_WC_FLUSH: Linux 6.2+
	WCAtomicWrite     WCOpcode = 9   // IB_WC_ATOMIC_WRITE: Linux 6.2+
	WCRecv            WCOpcode = 128 // IB_WC_RECV
	WCRecvRDMAWithImm WCOpcode = 129 // IB_WC_RECV_RDMA_WITH_IMM
)

// IsRecv reports whether the completion is for a receive work request.
func (o WCOpcode) IsRecv() bool { return o&WCRecv != 0 }

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "IBV_WC_SEND"
	case WCRDMAWrite:
		return "IBV_WC_RDMA_WRITE"
	case WCRDMARead:
		return "IBV_WC_RDMA_READ"
	case WCCompSwap:
		return "IBV_WC_COMP_SWAP"
	case WCFetchAdd:
		return "IBV_WC_FETCH_ADD"
	case WCBindMW:
		return "IBV_WC_BIND_MW"
	case WCLocalInv:
		return "IBV_WC_LOCAL_INV"
	case WCFlush:
		return "IBV_WC_FLUSH"
	case WCAtomicWrite:
		return "IBV_WC_ATOMIC_WRITE"
	case WCRecv:
		return "IBV_WC_RECV"
	case WCRecvRDMAWithImm:
		return "IBV_WC_RECV_RDMA_WITH_IMM"
	}
	return fmt.Sprintf("WCOpcode(%d)", uint32(o))
}

// WCStatus is enum ibv_wc_status.
type WCStatus uint32

// Completion statuses.
const (
	WCSuccess        WCStatus = 0  // IB_WC_SUCCESS
	WCLocLenErr      WCStatus = 1  // IB_WC_LOC_LEN_ERR
	WCLocQPOpErr     WCStatus = 2  // IB_WC_LOC_QP_OP_ERR
	WCLocEECOpErr    WCStatus = 3  // IB_WC_LOC_EEC_OP_ERR
	WCLocProtErr     WCStatus = 4  // IB_WC_LOC_PROT_ERR
	WCWRFlushErr     WCStatus = 5  // IB_WC_WR_FLUSH_ERR
	WCMWBindErr      WCStatus = 6  // IB_WC_MW_BIND_ERR
	WCBadRespErr     WCStatus = 7  // IB_WC_BAD_RESP_ERR
	WCLocAccessErr   WCStatus = 8  // IB_WC_LOC_ACCESS_ERR
	WCRemInvReqErr   WCStatus = 9  // IB_WC_REM_INV_REQ_ERR
	WCRemAccessErr   WCStatus = 10 // IB_WC_REM_ACCESS_ERR
	WCRemOpErr       WCStatus = 11 // IB_WC_REM_OP_ERR
	WCRetryExcErr    WCStatus = 12 // IB_WC_RETRY_EXC_ERR
	WCRNRRetryExcErr WCStatus = 13 // IB_WC_RNR_RETRY_EXC_ERR
	WCLocRDDViolErr  WCStatus = 14 // IB_WC_LOC_RDD_VIOL_ERR
	WCRemInvRdReqErr WCStatus = 15 // IB_WC_REM_INV_RD_REQ_ERR
	WCRemAbortErr    WCStatus = 16 // IB_WC_REM_ABORT_ERR
	WCInvEECNErr     WCStatus = 17 // IB_WC_INV_EECN_ERR
	WCInvEECStateErr WCStatus = 18 // IB_WC_INV_EEC_STATE_ERR
	WCFatalErr       WCStatus = 19 // IB_WC_FATAL_ERR
	WCRespTimeoutErr WCStatus = 20 // IB_WC_RESP_TIMEOUT_ERR
	WCGeneralErr     WCStatus = 21 // IB_WC_GENERAL_ERR
)

var wcStatus = [...]struct{ name, why string }{
	WCSuccess:        {"IBV_WC_SUCCESS", "the work request completed"},
	WCLocLenErr:      {"IBV_WC_LOC_LEN_ERR", "a length error: on a receive, the peer sent a message larger than the posted receive buffers; on a send, it is longer than the port allows"},
	WCLocQPOpErr:     {"IBV_WC_LOC_QP_OP_ERR", "either the local QP could not execute the request (malformed WQE, wrong opcode for the QP type, or the QP is not in a state to send) or, on a receive, the peer sent a message larger than the posted receive buffer (Soft-RoCE reports that so, as its own error)"},
	WCLocEECOpErr:    {"IBV_WC_LOC_EEC_OP_ERR", "local EE context error (RD transport, not used by RoCE)"},
	WCLocProtErr:     {"IBV_WC_LOC_PROT_ERR", "a local SGE refers to memory outside a registered MR, or its lkey belongs to another PD"},
	WCWRFlushErr:     {"IBV_WC_WR_FLUSH_ERR", "flushed: the QP went to the error state before this request ran (normal at teardown)"},
	WCMWBindErr:      {"IBV_WC_MW_BIND_ERR", "memory window bind failed"},
	WCBadRespErr:     {"IBV_WC_BAD_RESP_ERR", "the responder sent an unexpected response"},
	WCLocAccessErr:   {"IBV_WC_LOC_ACCESS_ERR", "a local protection error on an incoming RDMA: the local MR lacks the access the request needs"},
	WCRemInvReqErr:   {"IBV_WC_REM_INV_REQ_ERR", "the remote side rejected the request as invalid: its receive buffer is too small, or the opcode is not allowed (e.g. RDMA on a QP without remote access flags)"},
	WCRemAccessErr:   {"IBV_WC_REM_ACCESS_ERR", "the remote side refused access: wrong rkey, address outside the remote MR, or the MR lacks the remote access flag"},
	WCRemOpErr:       {"IBV_WC_REM_OP_ERR", "the remote side could not complete the operation (e.g. a protection error while writing to its receive buffer)"},
	WCRetryExcErr:    {"IBV_WC_RETRY_EXC_ERR", "no acknowledgement after retry_cnt retransmissions: the peer is unreachable, its QP is not in RTR/RTS, or the destination QPN/GID is wrong"},
	WCRNRRetryExcErr: {"IBV_WC_RNR_RETRY_EXC_ERR", "the receiver had no receive posted (RNR NAK) more often than rnr_retry allows: post receives before the peer sends"},
	WCLocRDDViolErr:  {"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation (RD transport, not used by RoCE)"},
	WCRemInvRdReqErr: {"IBV_WC_REM_INV_RD_REQ_ERR", "the remote side rejected an RDMA READ or atomic (not allowed by its QP, or max_dest_rd_atomic is 0)"},
	WCRemAbortErr:    {"IBV_WC_REM_ABORT_ERR", "the remote side aborted the operation"},
	WCInvEECNErr:     {"IBV_WC_INV_EECN_ERR", "invalid EE context number (RD transport)"},
	WCInvEECStateErr: {"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state (RD transport)"},
	WCFatalErr:       {"IBV_WC_FATAL_ERR", "fatal device error"},
	WCRespTimeoutErr: {"IBV_WC_RESP_TIMEOUT_ERR", "the response did not arrive in time"},
	WCGeneralErr:     {"IBV_WC_GENERAL_ERR", "general error: the driver reported a failure it did not classify"},
}

// String is the libibverbs name of the status, e.g. "IBV_WC_REM_ACCESS_ERR".
func (s WCStatus) String() string {
	if int(s) < len(wcStatus) {
		return wcStatus[s].name
	}
	return fmt.Sprintf("WCStatus(%d)", uint32(s))
}

// Explain says in one line what the status means and what usually causes it.
func (s WCStatus) Explain() string {
	if int(s) < len(wcStatus) {
		return wcStatus[s].why
	}
	return "unknown completion status"
}
