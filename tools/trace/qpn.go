// Copyright 2026 The rdmago Authors.

package trace

import "slices"

// qpnKey names a QP handle: handles are per process and device. The
// Formatter remembers the QP number of each handle it saw created (qpns), so
// that later commands naming the handle (MODIFY_QP qp=2, POST_SEND qp=2, ...)
// also show the QPN, which is what a program prints and what the rxe
// data-path counters are keyed by.
type qpnKey struct {
	pid, dev uint32
	handle   uint64
}

// qpnTableMax bounds the table; when full it starts over.
const qpnTableMax = 1 << 16

func fieldIndex(fs []Field, key string) int {
	return slices.IndexFunc(fs, func(x Field) bool { return x.Key == key })
}

// tieQPN learns handle -> QPN from a QP creation's response (qp= and qpn=)
// and adds qpn= after the qp= argument of any other command of the same
// process and device. Handles are reused after a destroy; the next creation
// overwrites the entry.
func (f *Formatter) tieQPN(d *Description, e Event) {
	if e.Kind != KindVerbsWrite && e.Kind != KindVerbsIoctl {
		return
	}
	if q, n := fieldIndex(d.Resp, "qp"), fieldIndex(d.Resp, "qpn"); q >= 0 && n >= 0 {
		h, ok1 := d.Resp[q].Val.(uint64)
		qpn, ok2 := d.Resp[n].Val.(uint64)
		if ok1 && ok2 {
			if f.qpns == nil || len(f.qpns) >= qpnTableMax {
				f.qpns = map[qpnKey]uint64{}
			}
			f.qpns[qpnKey{e.PID, e.Dev, h}] = qpn
			f.learnQPOwner(uint32(qpn), e)
		}
		return
	}
	q := fieldIndex(d.Args, "qp")
	if q < 0 || fieldIndex(d.Args, "qpn") >= 0 {
		return
	}
	h, ok := d.Args[q].Val.(uint64)
	if !ok {
		return
	}
	if qpn, known := f.qpns[qpnKey{e.PID, e.Dev, h}]; known {
		d.Args = slices.Insert(d.Args, q+1, Field{"qpn", qpn})
	}
}
