// Copyright 2026 The rdmago Authors.

package trace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// typeFinder is the part of *btf.Spec the offset resolver needs.
type typeFinder interface {
	AnyTypesByName(name string) ([]btf.Type, error)
}

// chain looks a name up in each finder in turn (a module's split BTF does
// not answer for the types it shares with vmlinux, such as sk_buff or, on
// Debian, ib_qp).
type chain []typeFinder

func (c chain) AnyTypesByName(name string) ([]btf.Type, error) {
	err := error(btf.ErrNotFound)
	for _, f := range c {
		ts, e := f.AnyTypesByName(name)
		if e == nil && len(ts) > 0 {
			return ts, nil
		}
		if e != nil && !errors.Is(e, btf.ErrNotFound) {
			err = e
		}
	}
	return nil, err
}

// findStruct returns the struct called name.
func findStruct(s typeFinder, name string) (*btf.Struct, error) {
	ts, err := s.AnyTypesByName(name)
	if err != nil {
		return nil, fmt.Errorf("BTF struct %s: %w", name, err)
	}
	for _, t := range ts {
		if st, ok := t.(*btf.Struct); ok {
			return st, nil
		}
	}
	return nil, fmt.Errorf("BTF: no struct named %s", name)
}

// findFunc returns the prototype of the function called name.
func findFunc(s typeFinder, name string) (*btf.FuncProto, error) {
	ts, err := s.AnyTypesByName(name)
	if err != nil {
		return nil, fmt.Errorf("BTF func %s: %w", name, err)
	}
	for _, t := range ts {
		if fn, ok := t.(*btf.Func); ok {
			if fp, ok := fn.Type.(*btf.FuncProto); ok {
				return fp, nil
			}
		}
	}
	return nil, fmt.Errorf("BTF: no function named %s", name)
}

var errNoMember = errors.New("no such member")

// memberOffset returns the byte offset and type of the member reached by path
// inside composite type t, looking through anonymous struct/union members as
// C does (vm_area_struct's vm_start sits in an anonymous union on 6.x).
func memberOffset(t btf.Type, path ...string) (uint32, btf.Type, error) {
	var off uint32
	cur := t
	for _, name := range path {
		c := btf.UnderlyingType(cur)
		if members(c) == nil {
			return 0, nil, fmt.Errorf("%s: %v is not a struct or union", name, cur)
		}
		o, mt, err := findMember(c, name)
		if err != nil {
			return 0, nil, fmt.Errorf("%s in %v: %w", name, cur, err)
		}
		off += o
		cur = mt
	}
	return off, cur, nil
}

func findMember(c btf.Type, name string) (uint32, btf.Type, error) {
	for _, m := range members(c) {
		if m.Name == name {
			if m.BitfieldSize != 0 || m.Offset%8 != 0 {
				return 0, nil, fmt.Errorf("bitfield")
			}
			return uint32(m.Offset / 8), m.Type, nil
		}
	}
	for _, m := range members(c) {
		if m.Name != "" {
			continue
		}
		if inner := btf.UnderlyingType(m.Type); members(inner) != nil {
			if o, t, err := findMember(inner, name); err == nil {
				return uint32(m.Offset/8) + o, t, nil
			}
		}
	}
	return 0, nil, errNoMember
}

// members returns the members of a struct or union, nil for other types.
func members(t btf.Type) []btf.Member {
	switch c := t.(type) {
	case *btf.Struct:
		return c.Members
	case *btf.Union:
		return c.Members
	}
	return nil
}

// structOffset is the byte offset of path in the struct called name.
func structOffset(s typeFinder, name string, path ...string) (int32, error) {
	st, err := findStruct(s, name)
	if err != nil {
		return -1, err
	}
	off, _, err := memberOffset(st, path...)
	if err != nil {
		return -1, fmt.Errorf("struct %s.%s: %w", name, strings.Join(path, "."), err)
	}
	return int32(off), nil
}

// kernelOffsetsFrom finds the offsets the uverbs programs use in vmlinux BTF;
// each one not found stays -1 (that detail is then not recorded).
func kernelOffsetsFrom(s typeFinder) (kernelOffsets, []error) {
	ko := unknownOffsets
	var errs []error
	set := func(dst *int32, name string, path ...string) {
		off, err := structOffset(s, name, path...)
		if err != nil {
			errs = append(errs, err)
			return
		}
		*dst = off
	}
	set(&ko.FileInode, "file", "f_inode")
	set(&ko.InodeRdev, "inode", "i_rdev")
	set(&ko.VMStart, "vm_area_struct", "vm_start")
	set(&ko.VMEnd, "vm_area_struct", "vm_end")
	set(&ko.VMPgoff, "vm_area_struct", "vm_pgoff")
	return ko, errs
}

// pointee returns the name of the struct a pointer type points to, "void"
// for void *, or "".
func pointee(t btf.Type) string {
	p, ok := btf.UnderlyingType(t).(*btf.Pointer)
	if !ok {
		return ""
	}
	switch target := btf.UnderlyingType(p.Target).(type) {
	case *btf.Struct:
		return target.Name
	case *btf.Void:
		return "void"
	}
	return ""
}
