// Copyright 2026 The rdmago Authors.

package trace

import (
	"errors"
	"testing"
)

// TestGlitchedRun: a perftest client that failed only its own timing check
// (the output of CI's failed TestLabStraceAgrees/ib_write_bw, 6.1) is a run
// that happened; traceCTool used to retry it against a server already gone.
// Every other failure stays one.
func TestGlitchedRun(t *testing.T) {
	exit1 := errors.New("exit status 1")
	glitch := "Correlation coefficient r^2: 0.770424 < 0.9\nCan't produce a report\n" +
		"---------------------------------------------------------------------------------------\n" +
		"                    RDMA_Write BW Test\n" +
		" local address: LID 0000 QPN 0x0a5a PSN 0x3bb73a RKey 0x1bbdc9 VAddr 0x0055a10d713000\n"
	if err := glitchedRun(t, "ib_write_bw client", exit1, glitch); err != nil {
		t.Errorf("glitch: %v, want nil", err)
	}
	for _, out := range []string{
		"Couldn't connect to 10.77.0.1:19721\nUnable to open file descriptor for socket connection Unable to init the socket connection\n",
		"Correlation coefficient r^2: 0.95\n",
		"",
	} {
		if err := glitchedRun(t, "ib_write_bw client", exit1, out); err != exit1 {
			t.Errorf("%q: %v, want %v", out, err, exit1)
		}
	}
	if err := glitchedRun(t, "ib_write_bw client", nil, glitch); err != nil {
		t.Errorf("no error: %v", err)
	}
}
