package abi

import (
	"encoding/binary"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// layout is one ABI struct as the C header lays it out: its C name, the Go
// type that ports it, and the size and field offsets written from the header
// (x86_64). Each *_layout_test.go file registers the structs of its header.
type layout struct {
	cName   string             // C struct name without "struct ", e.g. "ib_uverbs_cmd_hdr"
	goVal   any                // a zero value of the Go type
	size    uintptr            // sizeof(struct cName)
	offsets map[string]uintptr // C field name -> offsetof, for every named field
}

var abiLayouts []layout

func register(l ...layout) { abiLayouts = append(abiLayouts, l...) }

// normName maps a C or Go field name to the form both share under the
// naming rule: lower case, no underscores.
func normName(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

// goFields returns the Go struct's named fields by normalised name.
func goFields(t reflect.Type) map[string]reflect.StructField {
	m := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Name == "_" {
			continue
		}
		m[normName(f.Name)] = f
	}
	return m
}

func TestLayouts(t *testing.T) {
	if len(abiLayouts) == 0 {
		t.Fatal("no ABI layouts registered")
	}
	seen := map[string]bool{}
	fields := 0
	for _, l := range abiLayouts {
		if seen[l.cName] {
			t.Errorf("%s registered twice", l.cName)
		}
		seen[l.cName] = true
		typ := reflect.TypeOf(l.goVal)
		if typ.Kind() != reflect.Struct {
			t.Errorf("%s: Go value %T is not a struct", l.cName, l.goVal)
			continue
		}
		if got := typ.Size(); got != l.size {
			t.Errorf("%s (%s): Go size %d, C size %d", l.cName, typ.Name(), got, l.size)
		}
		// binary.Size counts only the bytes written out, so it differs from
		// the in-memory size exactly when Go inserted implicit padding.
		if bs := binary.Size(reflect.New(typ).Elem().Interface()); bs >= 0 && uintptr(bs) != typ.Size() {
			t.Errorf("%s (%s): implicit padding: binary.Size %d != unsafe.Sizeof %d", l.cName, typ.Name(), bs, typ.Size())
		}
		gf := goFields(typ)
		names := make([]string, 0, len(l.offsets))
		for n := range l.offsets {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			f, ok := gf[normName(n)]
			if !ok {
				t.Errorf("%s: C field %q has no Go field (naming rule: lower case, no underscores)", l.cName, n)
				continue
			}
			if f.Offset != l.offsets[n] {
				t.Errorf("%s.%s: Go offset %d, C offset %d", l.cName, n, f.Offset, l.offsets[n])
			}
			fields++
		}
	}
	t.Logf("checked %d structs, %d fields against the C headers", len(abiLayouts), fields)
}
