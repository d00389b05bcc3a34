// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"fmt"
	"io"

	"github.com/rdmago/rdmago/internal/sysfs"
)

// DeviceEntry is one line of `rdmainfo devices` (ibv_devices).
type DeviceEntry struct {
	Device   string     `json:"device"`
	NodeGUID sysfs.GUID `json:"node_guid"`
}

// Devices lists the RDMA devices with their node GUIDs (ibv_devices).
func (s *System) Devices() ([]DeviceEntry, error) {
	devs, err := s.FS.Devices()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceEntry, len(devs))
	for i, d := range devs {
		out[i] = DeviceEntry{Device: d.Name, NodeGUID: d.NodeGUID}
	}
	return out, nil
}

// WriteDevices prints the list in ibv_devices' layout.
func WriteDevices(w io.Writer, devs []DeviceEntry) {
	fmt.Fprintf(w, "    %-16s\t   node GUID\n", "device")
	fmt.Fprintf(w, "    %-16s\t----------------\n", "------")
	for _, d := range devs {
		fmt.Fprintf(w, "    %-16s\t%s\n", d.Device, d.NodeGUID.Hex())
	}
}
