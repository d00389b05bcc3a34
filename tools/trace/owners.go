// Copyright 2026 The rdmago Authors.

package trace

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rdmago/rdmago/internal/rdmanl"
)

// QPOwner is the process that created a QP.
type QPOwner struct {
	PID  uint32 // tgid
	Comm string // the command name when it was learnt
}

func (o QPOwner) String() string { return fmt.Sprintf("%s[%d]", o.Comm, o.PID) }

// The rxe data path runs in softirq and work-queue context, not in the
// process that owns the QP, so the rxe probes cannot filter by process in
// the kernel: their counts are keyed by QPN only. The Formatter ties QPNs to
// processes instead, from two sources:
//   - the create responses it decodes (tieQPN): every QP created while
//     tracing, by a process the probes' filter lets through;
//   - RDMA netlink's resource dump (`rdma resource show qp`, LearnQPOwners):
//     the QPs that exist when it is read, also those created before tracing
//     started, with the pid of the thread that created them.
// QPNs are per device, and rxe hands them out cyclically (a number comes
// back only after the 2^17 others), so the QPN alone names a QP here.

// learnQPOwner records that the process of e created QP qpn.
func (f *Formatter) learnQPOwner(qpn uint32, e Event) {
	f.setQPOwner(qpn, QPOwner{PID: e.PID, Comm: e.Comm})
}

// setQPOwner records o as the owner of QP qpn; the table starts afresh
// when it holds qpnTableMax QPs (as the Formatter's QPN table does).
func (f *Formatter) setQPOwner(qpn uint32, o QPOwner) {
	if f.owners == nil || len(f.owners) >= qpnTableMax {
		f.owners = map[uint32]QPOwner{}
	}
	f.owners[qpn] = o
}

// QPOwner returns the process that created QP qpn, if the Formatter knows.
func (f *Formatter) QPOwner(qpn uint32) (QPOwner, bool) {
	o, ok := f.owners[qpn]
	return o, ok
}

// LearnQPOwners asks RDMA netlink which process owns each QP of every RDMA
// device (RDMA_NLDEV_CMD_RES_QP_GET, as `rdma resource show qp`) and
// remembers the user QPs' owners; kernel QPs (the GSI QP 1, ...) have none.
// A QP already known from its create event keeps that owner. The kernel
// reports the creating thread's id: it is turned into its process's tgid,
// and the name read from /proc. It needs no privileges beyond what RDMA
// netlink's dump asks (none on Debian's kernels) and Linux.
func (f *Formatter) LearnQPOwners() error {
	qps, err := dumpQPs()
	if err != nil {
		return fmt.Errorf("QP owners: %w", err)
	}
	for _, q := range qps {
		if q.PID == 0 {
			continue
		}
		if _, known := f.owners[q.LQPN]; known {
			continue
		}
		o, ok := procOwner(q.PID)
		if !ok {
			continue // gone meanwhile
		}
		f.setQPOwner(q.LQPN, o)
	}
	return nil
}

// dumpQPs is RDMA netlink's dump of the QPs of every RDMA device
// (RDMA_NLDEV_CMD_RES_QP_GET, `rdma resource show qp`).
func dumpQPs() ([]rdmanl.QP, error) {
	c, err := rdmanl.Dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	devs, err := c.Devices()
	if err != nil {
		return nil, err
	}
	var out []rdmanl.QP
	for _, d := range devs {
		qps, err := c.QPs(d.Index)
		if err != nil {
			return nil, fmt.Errorf("QPs of %s: %w", d.Name, err)
		}
		out = append(out, qps...)
	}
	return out, nil
}

// procOwner reads the tgid and command name of thread tid from /proc
// (/proc/TID exists for every thread, listed or not).
func procOwner(tid uint32) (QPOwner, bool) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return QPOwner{}, false
	}
	var o QPOwner
	found := false
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Tgid:")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 32)
			if err != nil {
				return QPOwner{}, false
			}
			o.PID, found = uint32(n), true
			break
		}
	}
	if !found {
		return QPOwner{}, false
	}
	comm, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(o.PID), 10) + "/comm")
	if err != nil {
		return QPOwner{}, false
	}
	o.Comm = strings.TrimSuffix(string(comm), "\n")
	return o, true
}

// OwnedRXE returns the counts of the QPs whose owner passes the filter of
// o (PID, Comm), each with its owner filled in, and how many hits it left
// out (of other processes' QPs, of QPs whose owner is unknown and of hits
// whose QPN the probe could not read). Without a filter it returns every
// count, with the owners the Formatter knows.
func (f *Formatter) OwnedRXE(counts []RXECount, o Options) (kept []RXECount, otherHits uint64) {
	filtered := o.PID != 0 || o.Comm != ""
	for _, c := range counts {
		owner, known := f.owners[c.QPN]
		if c.QPN == QPNUnknown {
			known = false
		}
		if filtered && (!known || (o.PID != 0 && owner.PID != uint32(o.PID)) || (o.Comm != "" && owner.Comm != o.Comm)) {
			otherHits += c.Count
			continue
		}
		if known {
			c.PID, c.Comm = owner.PID, owner.Comm
		}
		kept = append(kept, c)
	}
	return kept, otherHits
}
