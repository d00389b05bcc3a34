package cm

// Code generated for issue 32; DO NOT EDIT by hand: add a row per exported constant
// whose value is written literally in place of the internal UAPI constant.

import (
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
)

// TestExportedConstsMatchABI checks that every exported constant written as a
// literal (so that no internal package shows in the public API) equals the UAPI
// constant it stands for.
func TestExportedConstsMatchABI(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"RejConsumerDefined", uint64(RejConsumerDefined), uint64(abi.IB_CM_REJ_CONSUMER_DEFINED)},
		{"RejVendorOptionNotSupported", uint64(RejVendorOptionNotSupported), uint64(abi.IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED)},
		{"PortSpaceTCP", uint64(PortSpaceTCP), uint64(abi.RDMA_PS_TCP)},
		{"PortSpaceUDP", uint64(PortSpaceUDP), uint64(abi.RDMA_PS_UDP)},
		{"PortSpaceIPoIB", uint64(PortSpaceIPoIB), uint64(abi.RDMA_PS_IPOIB)},
		{"JoinFullMember", uint64(JoinFullMember), uint64(abi.RDMA_MC_JOIN_FLAG_FULLMEMBER)},
		{"JoinSendOnlyFullMember", uint64(JoinSendOnlyFullMember), uint64(abi.RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

func TestEventTypesMatchABI(t *testing.T) {
	for _, c := range []struct {
		got  EventType
		want abi.CMEventType
	}{
		{EventAddrResolved, abi.RDMA_CM_EVENT_ADDR_RESOLVED},
		{EventAddrError, abi.RDMA_CM_EVENT_ADDR_ERROR},
		{EventRouteResolved, abi.RDMA_CM_EVENT_ROUTE_RESOLVED},
		{EventRouteError, abi.RDMA_CM_EVENT_ROUTE_ERROR},
		{EventConnectRequest, abi.RDMA_CM_EVENT_CONNECT_REQUEST},
		{EventConnectResponse, abi.RDMA_CM_EVENT_CONNECT_RESPONSE},
		{EventConnectError, abi.RDMA_CM_EVENT_CONNECT_ERROR},
		{EventUnreachable, abi.RDMA_CM_EVENT_UNREACHABLE},
		{EventRejected, abi.RDMA_CM_EVENT_REJECTED},
		{EventEstablished, abi.RDMA_CM_EVENT_ESTABLISHED},
		{EventDisconnected, abi.RDMA_CM_EVENT_DISCONNECTED},
		{EventDeviceRemoval, abi.RDMA_CM_EVENT_DEVICE_REMOVAL},
		{EventMulticastJoin, abi.RDMA_CM_EVENT_MULTICAST_JOIN},
		{EventMulticastError, abi.RDMA_CM_EVENT_MULTICAST_ERROR},
		{EventAddrChange, abi.RDMA_CM_EVENT_ADDR_CHANGE},
		{EventTimewaitExit, abi.RDMA_CM_EVENT_TIMEWAIT_EXIT},
		{EventAddrInfoResolved, abi.RDMA_CM_EVENT_ADDRINFO_RESOLVED},
		{EventAddrInfoError, abi.RDMA_CM_EVENT_ADDRINFO_ERROR},
		{EventUser, abi.RDMA_CM_EVENT_USER},
	} {
		if uint32(c.got) != uint32(c.want) || c.got.String() != c.want.String() {
			t.Errorf("%v = %d, want %v = %d", c.got, uint32(c.got), c.want, uint32(c.want))
		}
	}
}
