// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"fmt"
	"strings"

	"github.com/rdmago/rdmago/internal/abi"
)

// provider is the seam between the generic verbs in this package and a
// driver's user-space half. The generic code issues the uverbs commands;
// the provider says how the driver's queues look. Only rxe exists: its ring and
// WQE format live in package uverbs/internal/rxe, and the driver-specific
// parts of commands (mmap cookies in create responses) are decoded in the
// create functions under "provider:" comments. Another software provider
// (siw: same mmap + wr_count=0 doorbell, per-slot valid flags instead of
// indices) would be a sibling package plus a case in those places.
type provider struct {
	name     string
	driverID uint32
	minABI   int // accepted range of the driver's uverbs ABI version
	maxABI   int
}

var providerRXE = &provider{name: "rxe", driverID: abi.RDMA_DRIVER_RXE, minABI: 1, maxABI: 2}

// providerFor picks the provider of d. The netlink driver id is
// authoritative; without it, rxe is recognised by its sysfs "parent" attribute
// or its name, as rdma-core's VERBS_NAME_MATCH("rxe") does.
func providerFor(d Device) (*provider, error) {
	isRXE := d.DriverID == abi.RDMA_DRIVER_RXE
	if d.DriverID == 0 {
		isRXE = sysRoot.Parent(d.Name) != "" || strings.HasPrefix(d.Name, "rxe")
	}
	if !isRXE {
		return nil, fmt.Errorf("device %s (driver id %d): only Soft-RoCE (rxe) is implemented: %w", d.Name, d.DriverID, ErrNotSupported)
	}
	p := providerRXE
	if d.ABIVersion < p.minABI || d.ABIVersion > p.maxABI {
		return nil, fmt.Errorf("device %s: driver ABI version %d outside %d..%d supported by the %s provider: %w",
			d.Name, d.ABIVersion, p.minABI, p.maxABI, p.name, ErrNotSupported)
	}
	return p, nil
}
