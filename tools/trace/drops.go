// Copyright 2026 The rdmago Authors.

package trace

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmago/rdmago/internal/abi"
)

// Dropped is a count of records of one kind of call that the ring buffer had
// no room for (the drops map, progs_ring.go).
type Dropped struct {
	Kind  Kind
	Head  [8]byte // the first 8 bytes of the call's data (its command header); zero when unread
	Data  bool    // Head was read
	Extra uint32  // ioctl: the write command an INVOKE_WRITE carried, if seen
	Count uint64
}

// LostOp is a count of lost events of one operation.
type LostOp struct {
	Subsys, Op string
	Count      uint64
}

// LostOps names the dropped records as Describe names their events
// ("uverbs POST_SEND", "uverbs ioctl QP.CREATE", "cm ESTABLISHED") and adds
// up those of the same name, most first.
func (f *Formatter) LostOps(ds []Dropped) []LostOp {
	sum := map[[2]string]uint64{}
	for _, d := range ds {
		e := Event{Kind: d.Kind}
		switch d.Kind {
		case KindCMEvent:
			e.A0 = binary.NativeEndian.Uint64(d.Head[:])
		case KindVerbsIoctl:
			e.A0 = uint64(abi.RDMA_VERBS_IOCTL)
			if d.Data {
				// The header (object, method, num_attrs) and, when the record
				// showed one, the WRITE_CMD attribute alone.
				e.Data = make([]byte, sizeofIoctlHdr+sizeofIoctlAttr)
				copy(e.Data, d.Head[:])
				binary.NativeEndian.PutUint16(e.Data[6:], 0)
				if d.Extra != 0 {
					binary.NativeEndian.PutUint16(e.Data[6:], 1)
					binary.NativeEndian.PutUint16(e.Data[sizeofIoctlHdr:], abi.UVERBS_ATTR_WRITE_CMD)
					binary.NativeEndian.PutUint64(e.Data[sizeofIoctlHdr+8:], uint64(d.Extra))
				}
			}
		case KindVerbsWrite, KindUCMWrite:
			if d.Data {
				e.Data = d.Head[:]
			}
		}
		desc := f.Describe(e)
		sum[[2]string{desc.Subsys, desc.Op}] += d.Count
	}
	out := make([]LostOp, 0, len(sum))
	for k, n := range sum {
		out = append(out, LostOp{Subsys: k[0], Op: k[1], Count: n})
	}
	slices.SortFunc(out, func(a, b LostOp) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Subsys+" "+a.Op, b.Subsys+" "+b.Op))
	})
	return out
}

// LostReport says how many events the tracer lost, and of which calls:
// "lost 812 events (ring buffer full: uverbs POST_SEND 800, uverbs
// REQ_NOTIFY_CQ 12) and 0 calls (in-flight table full)"; "" when none were.
func (f *Formatter) LostReport(ringFull, inflightFull uint64, ds []Dropped) string {
	if ringFull+inflightFull == 0 {
		return ""
	}
	var parts []string
	var named uint64
	for _, l := range f.LostOps(ds) {
		parts = append(parts, fmt.Sprintf("%s %s %d", l.Subsys, l.Op, l.Count))
		named += l.Count
	}
	if named < ringFull {
		parts = append(parts, fmt.Sprintf("unnamed %d", ringFull-named))
	}
	what := ""
	if len(parts) > 0 {
		what = ": " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("lost %d events (ring buffer full%s) and %d calls (in-flight table full)", ringFull, what, inflightFull)
}
