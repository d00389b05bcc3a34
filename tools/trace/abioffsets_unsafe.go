// Copyright 2026 The rdmago Authors.

package trace

import (
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

// Offsets and sizes taken from abi's structs at compile time (unsafe.Offsetof
// only; nothing is dereferenced here).
var (
	sizeofUCMCmdHdr = int16(unsafe.Sizeof(abi.UCMCmdHdr{}))

	// defaultUCMResp lists the ucma commands whose responses the return probe
	// reads: where the response pointer sits in the command and how much of
	// the response is worth reading (the fixed head of the struct).
	defaultUCMResp = []respRead{
		{Cmd: abi.RDMA_USER_CM_CMD_CREATE_ID,
			PtrOff: sizeofUCMCmdHdr + int16(unsafe.Offsetof(abi.UCMCreateID{}.Response)),
			Size:   int32(unsafe.Sizeof(abi.UCMCreateIDResp{}))},
		{Cmd: abi.RDMA_USER_CM_CMD_DESTROY_ID,
			PtrOff: sizeofUCMCmdHdr + int16(unsafe.Offsetof(abi.UCMDestroyID{}.Response)),
			Size:   int32(unsafe.Sizeof(abi.UCMDestroyIDResp{}))},
		{Cmd: abi.RDMA_USER_CM_CMD_INIT_QP_ATTR,
			PtrOff: sizeofUCMCmdHdr + int16(unsafe.Offsetof(abi.UCMInitQPAttr{}.Response)),
			Size:   int32(unsafe.Offsetof(abi.QPAttr{}.RqPSN))},
		{Cmd: abi.RDMA_USER_CM_CMD_GET_EVENT,
			PtrOff: sizeofUCMCmdHdr + int16(unsafe.Offsetof(abi.UCMGetEvent{}.Response)),
			Size:   int32(unsafe.Offsetof(abi.UCMEventResp{}.Param))},
	}

	// Fields of rdma_ucm_event_resp the formatter decodes.
	ucmEventRespID     = int(unsafe.Offsetof(abi.UCMEventResp{}.ID))
	ucmEventRespEvent  = int(unsafe.Offsetof(abi.UCMEventResp{}.Event))
	ucmEventRespStatus = int(unsafe.Offsetof(abi.UCMEventResp{}.Status))

	// Where the id of CONNECT and ACCEPT ends, past their connection parameters.
	ucmConnectIDEnd = int(unsafe.Offsetof(abi.UCMConnect{}.ID)) + 4
	ucmAcceptIDEnd  = int(unsafe.Offsetof(abi.UCMAccept{}.ID)) + 4

	// Where ib_uverbs_modify_qp's last attribute shown (rnr_retry) ends.
	modifyQPEnd = int(unsafe.Offsetof(abi.ModifyQP{}.RnrRetry)) + 1

	// Where ib_uverbs_query_device_resp's last field shown (max_pd) ends.
	queryDeviceMaxPDEnd = int(unsafe.Offsetof(abi.QueryDeviceResp{}.MaxPD)) + 4

	sizeofVerbsCmdHdr = int(unsafe.Sizeof(abi.CmdHdr{}))
	sizeofVerbsExHdr  = int(unsafe.Sizeof(abi.ExCmdHdr{}))
)

// Constant sizes and offsets, usable in the programs' instructions.
const (
	sizeofIoctlHdr        = int(unsafe.Sizeof(abi.IoctlHdr{}))
	sizeofIoctlAttr       = int(unsafe.Sizeof(abi.IoctlAttr{}))
	offsetofIoctlNumAttrs = int(unsafe.Offsetof(abi.IoctlHdr{}.NumAttrs))
	sizeofGIDEntry        = int(unsafe.Sizeof(abi.GIDEntry{}))
	sizeofUverbsWC        = int32(unsafe.Sizeof(abi.WC{}))

	// struct rxe_send_wqe: the fields of the WQE digest (progs_rxe.go).
	rxeWQEOpcode    = int(unsafe.Offsetof(abi.RxeSendWQE{}.WR) + unsafe.Offsetof(abi.RxeSendWR{}.Opcode))
	rxeWQESendFlags = int(unsafe.Offsetof(abi.RxeSendWR{}.SendFlags))
	rxeWQEImm       = int(unsafe.Offsetof(abi.RxeSendWR{}.ImmData))
	rxeWQEUnion     = int(unsafe.Offsetof(abi.RxeSendWR{}.WR))
	rxeWQEDMALen    = int32(unsafe.Offsetof(abi.RxeSendWQE{}.DMA) + unsafe.Offsetof(abi.RxeDMAInfo{}.Length))
)
