package abi

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/rdmago/rdmago/internal/labtest"
)

// This file checks every struct registered in abiLayouts against the running
// kernel's own BTF (vmlinux plus the RDMA modules). The C headers the layout
// tables were taken from are rdma-core's copies; BTF is what the kernel was
// really compiled with.

// btfModules are the modules whose BTF is searched besides vmlinux.
var btfModules = []string{"ib_core", "ib_uverbs", "rdma_rxe", "ib_cm", "iw_cm", "rdma_cm", "rdma_ucm"}

// minBTFStructs is how many registered structs the kernel's BTF must know for
// TestBTFLayouts to pass, so that a broken BTF load cannot pass by finding
// nothing. When this was tuned, Linux 6.1 and 6.12 knew 144 of 152: not the
// UAPI-only ib_uverbs_buffer_desc, ib_uverbs_clock_info, ib_uverbs_sge, nor
// the five rdma_user_cm structs newer than 6.12.
const minBTFStructs = 120

// cMember is one named C member of a BTF struct, at its absolute offset.
type cMember struct {
	names    []string // the member's name; for a union also its first member's
	sizes    []uint32 // the size that goes with each name
	offset   uint32   // bytes
	bitfield bool
	flex     bool // flexible array or other zero-size member (DECLARE_FLEX_ARRAY's __empty_*)
	alt      bool // a later member of an anonymous union: the port may skip it
}

// flattenBTF lists the named members of a struct or union, descending into
// anonymous structs and unions.
func flattenBTF(members []btf.Member, base uint32, isUnion, alt bool) ([]cMember, error) {
	var out []cMember
	for i, m := range members {
		if m.Offset%8 != 0 && m.BitfieldSize == 0 {
			return nil, fmt.Errorf("member %q at bit offset %d", m.Name, m.Offset)
		}
		off := base + uint32(m.Offset/8)
		a := alt || (isUnion && i > 0)
		typ := btf.UnderlyingType(m.Type)
		if m.Name == "" {
			var sub []cMember
			var err error
			switch u := typ.(type) {
			case *btf.Struct:
				sub, err = flattenBTF(u.Members, off, false, a)
			case *btf.Union:
				sub, err = flattenBTF(u.Members, off, true, a)
			default:
				continue // unnamed padding bitfield
			}
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		cm := cMember{names: []string{m.Name}, offset: off, bitfield: m.BitfieldSize != 0, alt: a}
		size, err := btf.Sizeof(typ)
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", m.Name, err)
		}
		cm.sizes = []uint32{uint32(size)}
		if arr, ok := typ.(*btf.Array); (ok && arr.Nelems == 0) || size == 0 {
			cm.flex = true
		}
		if u, ok := typ.(*btf.Union); ok && len(u.Members) > 0 && u.Members[0].Name != "" {
			fs, err := btf.Sizeof(u.Members[0].Type)
			if err != nil {
				return nil, fmt.Errorf("member %q: %w", m.Name, err)
			}
			cm.names = append(cm.names, u.Members[0].Name)
			cm.sizes = append(cm.sizes, uint32(fs))
		}
		out = append(out, cm)
	}
	return out, nil
}

// reservedName reports whether a C member name is one that ports may write
// as a blank (_) field.
func reservedName(n string) bool {
	n = strings.ToLower(strings.TrimLeft(n, "_"))
	for _, p := range []string{"reserved", "rsvd", "resv", "pad", "unused"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// btfResult is what matchBTF found for one struct.
type btfResult struct {
	fields   int      // C members matched with a Go field (offset and size compared)
	problems []string // mismatches: each fails the test
	notes    []string // members skipped or accepted for a stated reason
	flex     []string // flexible arrays and zero-size members, not Go fields
}

// matchBTF compares Go type goType, which ports C struct cName, with the
// kernel's BTF description s: the total size, and for every named C member
// (members of anonymous structs and unions at their absolute offsets) the
// offset and size of the Go field of the same normalised name (the naming
// rule). A C union member may be ported under its own name or its first
// member's. A C member without a Go field fails, except a later member of an
// anonymous union, a flexible array or zero-size member, a bitfield, and a
// member that lies inside a blank or reserved Go field (a reserved C member
// written as padding, or a field of a kernel newer than the ported header).
// A reserved C member that the Go port (from a newer header) splits into
// reserved and new fields is accepted when those fields tile it exactly.
func matchBTF(cName string, goType reflect.Type, s *btf.Struct) btfResult {
	var r btfResult
	bad := func(format string, a ...any) {
		r.problems = append(r.problems, cName+": "+fmt.Sprintf(format, a...))
	}
	if uintptr(s.Size) != goType.Size() {
		bad("kernel size %d, Go %s size %d", s.Size, goType.Name(), goType.Size())
	}
	members, err := flattenBTF(s.Members, 0, false, false)
	if err != nil {
		bad("%v", err)
		return r
	}
	gf := goFields(goType)
	var all, spare []reflect.StructField // fields with bytes; blank or reserved ones
	for i := range goType.NumField() {
		f := goType.Field(i)
		if f.Type.Size() == 0 {
			continue
		}
		all = append(all, f)
		if f.Name == "_" || reservedName(f.Name) {
			spare = append(spare, f)
		}
	}
	inside := func(fs []reflect.StructField, off, size uint32) (reflect.StructField, bool) {
		for _, f := range fs {
			if f.Offset <= uintptr(off) && uintptr(off)+uintptr(size) <= f.Offset+f.Type.Size() {
				return f, true
			}
		}
		return reflect.StructField{}, false
	}
	for _, m := range members {
		var f reflect.StructField
		var size uint32
		found := false
		for i, n := range m.names {
			if f, found = gf[normName(n)]; found {
				size = m.sizes[i]
				break
			}
		}
		switch {
		case found:
			r.fields++
			if f.Offset != uintptr(m.offset) {
				bad("%s: kernel offset %d, Go %s offset %d", m.names[0], m.offset, f.Name, f.Offset)
			} else if !m.bitfield && !m.flex && f.Type.Size() != uintptr(size) {
				if names, ok := tiles(all, m.offset, size); ok && reservedName(m.names[0]) && f.Type.Size() < uintptr(size) {
					r.notes = append(r.notes, fmt.Sprintf("%s.%s: the kernel reserves %d bytes at %d, the ported header uses them as %s (fields newer than this kernel)", cName, m.names[0], size, m.offset, strings.Join(names, ", ")))
				} else {
					bad("%s: kernel size %d, Go %s size %d", m.names[0], size, f.Name, f.Type.Size())
				}
			}
		case m.alt:
			// Another view of a union whose first member is ported.
		case m.flex:
			r.flex = append(r.flex, fmt.Sprintf("%s.%s@%d", cName, m.names[0], m.offset))
		case m.bitfield:
			r.notes = append(r.notes, fmt.Sprintf("%s.%s: bitfield at %d, no Go field of that name", cName, m.names[0], m.offset))
		case func() bool { f, found = inside(spare, m.offset, m.sizes[0]); return found }():
			if reservedName(m.names[0]) {
				r.notes = append(r.notes, fmt.Sprintf("%s.%s: reserved, ported as padding %s", cName, m.names[0], fieldName(f)))
			} else {
				r.notes = append(r.notes, fmt.Sprintf("%s.%s: a kernel field at %d inside the port's %s (kernel newer than the ported header)", cName, m.names[0], m.offset, fieldName(f)))
			}
		default:
			bad("kernel member %s at offset %d has no Go field (naming rule: lower case, no underscores)", m.names[0], m.offset)
		}
	}
	return r
}

// tiles reports whether the Go fields starting inside [off, off+size) cover
// that range exactly, one after the other, and names them.
func tiles(fields []reflect.StructField, off, size uint32) ([]string, bool) {
	var names []string
	at := uintptr(off)
	for _, f := range fields {
		if f.Offset < uintptr(off) || f.Offset >= uintptr(off+size) {
			continue
		}
		if f.Offset != at {
			return nil, false
		}
		at += f.Type.Size()
		names = append(names, fieldName(f))
	}
	return names, at == uintptr(off+size)
}

func fieldName(f reflect.StructField) string {
	return fmt.Sprintf("%s (%d@%d)", f.Name, f.Type.Size(), f.Offset)
}

// btfSpec is one loaded BTF blob.
type btfSpec struct {
	name string
	spec *btf.Spec
}

// btfStructs returns the distinct structs called name in specs.
func btfStructs(specs []btfSpec, name string) ([]*btf.Struct, error) {
	var out []*btf.Struct
	for _, s := range specs {
		types, err := s.spec.AnyTypesByName(name)
		if errors.Is(err, btf.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		for _, typ := range types {
			st, ok := typ.(*btf.Struct)
			if !ok {
				continue
			}
			dup := slices.ContainsFunc(out, func(o *btf.Struct) bool {
				return o == st || btfShape(o) == btfShape(st)
			})
			if !dup {
				out = append(out, st)
			}
		}
	}
	return out, nil
}

// btfShape is a struct's size and top-level member names and offsets, to
// tell copies of one struct from different structs of the same name.
func btfShape(s *btf.Struct) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", s.Size)
	for _, m := range s.Members {
		fmt.Fprintf(&b, " %s@%d/%d", m.Name, m.Offset, m.BitfieldSize)
	}
	return b.String()
}

// loadKernelBTF loads vmlinux and the RDMA modules' BTF.
func loadKernelBTF(t *testing.T) []btfSpec {
	t.Helper()
	base, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatalf("load vmlinux BTF: %v (the lab kernel must have CONFIG_DEBUG_INFO_BTF)", err)
	}
	specs := []btfSpec{{"vmlinux", base}}
	var missing []string
	for _, m := range btfModules {
		s, err := btf.LoadSplitSpec(filepath.Join("/sys/kernel/btf", m), base)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, m)
			continue
		}
		if err != nil {
			t.Fatalf("load BTF of module %s: %v", m, err)
		}
		specs = append(specs, btfSpec{m, s})
	}
	if len(missing) > 0 {
		t.Logf("no module BTF for %v (built in, or not loaded)", missing)
	}
	return specs
}

func TestBTFLayouts(t *testing.T) {
	labtest.Require(t)
	checkBTFLayouts(t, loadKernelBTF(t))
}

// checkBTFLayouts compares every registered layout with the structs of the
// same name in specs.
func checkBTFLayouts(t *testing.T, specs []btfSpec) {
	t.Helper()
	var found, fields int
	var unknown, notes, flex []string
	for _, l := range abiLayouts {
		cands, err := btfStructs(specs, l.cName)
		if err != nil {
			t.Fatalf("look up %s: %v", l.cName, err)
		}
		if len(cands) == 0 {
			unknown = append(unknown, l.cName)
			continue
		}
		found++
		// Pass if one candidate matches; report the closest (fewest problems).
		var best *btfResult
		for _, c := range cands {
			r := matchBTF(l.cName, reflect.TypeOf(l.goVal), c)
			if best == nil || len(r.problems) < len(best.problems) {
				best = &r
			}
		}
		if len(cands) > 1 {
			t.Logf("%s: %d distinct BTF structs of that name, compared with the closest", l.cName, len(cands))
		}
		for _, p := range best.problems {
			t.Error(p)
		}
		fields += best.fields
		notes = append(notes, best.notes...)
		flex = append(flex, best.flex...)
	}
	sort.Strings(unknown)
	for _, n := range notes {
		t.Log(n)
	}
	t.Logf("flexible arrays and zero-size members (no Go field, by design): %d: %s", len(flex), strings.Join(flex, " "))
	t.Logf("BTF: checked %d of %d registered structs, %d fields; not in the kernel's BTF (UAPI-only): %d %v",
		found, len(abiLayouts), fields, len(unknown), unknown)
	if found < minBTFStructs {
		t.Fatalf("the kernel's BTF knew only %d registered structs, want at least %d: is the BTF load broken?", found, minBTFStructs)
	}
}

// TestBTFCMEvents compares the CM event codes with the kernel's
// enum rdma_cm_event_type (rdma_cm module).
func TestBTFCMEvents(t *testing.T) {
	labtest.Require(t)
	checkBTFCMEvents(t, loadKernelBTF(t))
}

func checkBTFCMEvents(t *testing.T, specs []btfSpec) {
	t.Helper()
	var e *btf.Enum
	for _, s := range specs {
		if err := s.spec.TypeByName("rdma_cm_event_type", &e); err == nil {
			break
		}
	}
	if e == nil {
		t.Fatal("no enum rdma_cm_event_type in the kernel's BTF (is rdma_cm loaded?)")
	}
	seen := map[string]bool{}
	var top uint64 // the kernel's highest code
	for _, v := range e.Values {
		seen[strings.TrimPrefix(v.Name, "RDMA_CM_EVENT_")] = true
		top = max(top, v.Value)
		got := CMEventType(v.Value).String()
		switch {
		case v.Value >= uint64(len(cmEventNames)):
			t.Logf("kernel has %s = %d, newer than this port", v.Name, v.Value)
		case got != v.Name:
			t.Errorf("kernel %s = %d, but abi says %d is %s", v.Name, v.Value, v.Value, got)
		}
	}
	var newer []string
	for i, n := range cmEventNames {
		switch {
		case seen[n]:
		case uint64(i) > top:
			newer = append(newer, "RDMA_CM_EVENT_"+n)
		default:
			t.Errorf("abi has RDMA_CM_EVENT_%s = %d, the kernel's enum has no such name", n, i)
		}
	}
	if len(newer) > 0 {
		t.Logf("abi codes newer than this kernel: %v", newer)
	}
	t.Logf("enum rdma_cm_event_type: %d kernel values, %d in abi", len(e.Values), len(cmEventNames))
}
