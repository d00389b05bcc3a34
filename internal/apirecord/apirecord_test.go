// Copyright 2026 The rdmago Authors.

// Package apirecord holds the test that records rdmago's exported API in
// api/*.txt, as Go's own api/ files do: every change to the public surface
// shows up as a diff in review. After an intended change, run
//
//	go test ./internal/apirecord -update
//
// and commit the api/ files with the change.
package apirecord

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite api/*.txt from the code")

const module = "github.com/rdmago/rdmago"

// root is the module's directory, two levels up from this package.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return r
}

// publicPackages lists the module's importable library packages: not
// internal, not a command, not the tools, not testdata.
func publicPackages(t *testing.T, r string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(r, path)
		name := d.Name()
		if rel != "." && (strings.HasPrefix(name, ".") || name == "internal" || name == "testdata" ||
			rel == "cmd" || rel == "tools" || rel == "docs" || rel == "api" || rel == "examples" || rel == "scripts") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
			return filepath.SkipDir // a module of its own
		}
		if p, err := linuxContext().ImportDir(path, 0); err == nil && len(p.GoFiles) > 0 && p.Name != "main" {
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func linuxContext() *build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.CgoEnabled = "linux", "amd64", false
	return &c
}

// record returns the sorted API lines of the package in dir, and the
// exported declarations that name an internal package.
func record(t *testing.T, r, rel string) (lines, leaks []string) {
	t.Helper()
	bp, err := linuxContext().ImportDir(filepath.Join(r, rel), 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	pkg := "pkg " + rel
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(bp.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]bool{} // import names of internal packages
		for _, im := range f.Imports {
			path := strings.Trim(im.Path.Value, `"`)
			if strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal") {
				n := filepath.Base(path)
				if im.Name != nil {
					n = im.Name.Name
				}
				internal[n] = true
			}
		}
		emit := func(node ast.Node, s string) {
			lines = append(lines, pkg+", "+s)
			ast.Inspect(node, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] {
						leaks = append(leaks, fmt.Sprintf("%s: %s names %s.%s", pkg, s, id.Name, sel.Sel.Name))
					}
				}
				return true
			})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					recv := typeString(fset, d.Recv.List[0].Type)
					if !ast.IsExported(strings.TrimLeft(strings.SplitN(recv, "[", 2)[0], "*")) {
						continue
					}
					emit(d.Type, fmt.Sprintf("method (%s) %s%s", recv, d.Name.Name, strings.TrimPrefix(typeString(fset, d.Type), "func")))
				} else {
					emit(d.Type, fmt.Sprintf("func %s%s", d.Name.Name, strings.TrimPrefix(typeString(fset, d.Type), "func")))
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						typeLines(fset, s, emit)
					case *ast.ValueSpec:
						for i, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							line := fmt.Sprintf("%s %s", d.Tok, n.Name)
							if s.Type != nil {
								line += " " + typeString(fset, s.Type)
							}
							if d.Tok == token.CONST && i < len(s.Values) {
								line += " = " + typeString(fset, s.Values[i])
							}
							// A const's value shows in go doc and is checked; a
							// var's (an error sentinel shared with an internal
							// package) is not part of its API.
							var node ast.Node = s
							if d.Tok == token.VAR {
								node = &ast.ValueSpec{Names: s.Names, Type: s.Type}
							}
							emit(node, line)
						}
					}
				}
			}
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines), leaks
}

// typeLines emits a type's line and, for structs and interfaces, one line
// per exported field or method.
func typeLines(fset *token.FileSet, s *ast.TypeSpec, emit func(ast.Node, string)) {
	name := s.Name.Name
	assign := ""
	if s.Assign.IsValid() {
		assign = "= "
	}
	switch tt := s.Type.(type) {
	case *ast.StructType:
		emit(s.Name, "type "+name+" struct")
		for _, f := range tt.Fields.List {
			if len(f.Names) == 0 { // embedded
				emit(f.Type, fmt.Sprintf("type %s struct, embedded %s", name, typeString(fset, f.Type)))
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					emit(f.Type, fmt.Sprintf("type %s struct, %s %s", name, n.Name, typeString(fset, f.Type)))
				}
			}
		}
	case *ast.InterfaceType:
		emit(s.Name, "type "+name+" interface")
		for _, m := range tt.Methods.List {
			if len(m.Names) == 0 {
				emit(m.Type, fmt.Sprintf("type %s interface, embedded %s", name, typeString(fset, m.Type)))
				continue
			}
			for _, n := range m.Names {
				if n.IsExported() {
					emit(m.Type, fmt.Sprintf("type %s interface, %s%s", name, n.Name, strings.TrimPrefix(typeString(fset, m.Type), "func")))
				}
			}
		}
	default:
		emit(s.Type, fmt.Sprintf("type %s %s%s", name, assign, typeString(fset, s.Type)))
	}
}

func typeString(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	if err := (&printer.Config{Mode: printer.RawFormat}).Fprint(&b, fset, n); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func apiFile(r, rel string) string {
	return filepath.Join(r, "api", strings.ReplaceAll(rel, "/", "_")+".txt")
}

// TestAPI compares each public package's exported API with its record in
// api/, and fails if an exported declaration names an internal package
// (a user could not name that type).
func TestAPI(t *testing.T) {
	r := root(t)
	pkgs := publicPackages(t, r)
	if len(pkgs) == 0 {
		t.Fatal("no public packages found")
	}
	want := map[string]bool{}
	for _, rel := range pkgs {
		lines, leaks := record(t, r, rel)
		for _, l := range leaks {
			t.Errorf("exported API names an internal package: %s", l)
		}
		got := strings.Join(lines, "\n") + "\n"
		file := apiFile(r, rel)
		want[filepath.Base(file)] = true
		if *update {
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s has no API record: %v (run go test ./internal/apirecord -update)", rel, err)
			continue
		}
		if d := cmp.Diff(string(old), got); d != "" {
			t.Errorf("%s's exported API differs from %s (-recorded +code); if intended, run go test ./internal/apirecord -update and commit api/:\n%s",
				module+"/"+rel, filepath.Base(file), d)
		}
	}
	// A record without a package is stale.
	ents, err := os.ReadDir(filepath.Join(r, "api"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".txt") && !want[e.Name()] {
			if *update {
				os.Remove(filepath.Join(r, "api", e.Name()))
				continue
			}
			t.Errorf("api/%s records a package that no longer exists (run with -update)", e.Name())
		}
	}
}

// TestExamples checks that every public package has examples a newcomer
// can copy: an example_test.go with at least one Example function.
func TestExamples(t *testing.T) {
	r := root(t)
	for _, rel := range publicPackages(t, r) {
		dir := filepath.Join(r, rel)
		fset := token.NewFileSet()
		found := false
		for _, name := range []string{"example_test.go", "example_lab_test.go"} {
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				continue
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fd.Name.Name, "Example") {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%s has no Example function in example_test.go or example_lab_test.go", rel)
		}
	}
}
