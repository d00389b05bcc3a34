// Copyright 2026 The rdmago Authors.

package sys

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// libraryDirs are the library's packages (relative to the module root): every
// system call they make goes through this package. Tools and commands may
// make their own.
var libraryDirs = []string{"internal/abi", "uverbs", "cm", "oob", "rsocket", "transfer", "internal/netlink", "internal/rdmanl", "internal/sysfs"}

// TestOnlySysEntersTheKernel fails when a library file (tests excluded)
// imports golang.org/x/sys/unix or calls a function of package syscall
// (syscall.Errno conversions are values, not calls into the kernel).
func TestOnlySysEntersTheKernel(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from %s: %v", mustGetwd(t), err)
	}
	files := 0
	for _, dir := range libraryDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			files++
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			syscallName := ""
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				switch p {
				case "golang.org/x/sys/unix":
					t.Errorf("%s imports golang.org/x/sys/unix: make the call through internal/sys", path)
				case "syscall":
					syscallName = "syscall"
					if imp.Name != nil {
						syscallName = imp.Name.Name
					}
				}
			}
			if syscallName == "" {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == syscallName && sel.Sel.Name != "Errno" {
					t.Errorf("%s calls syscall.%s: make the call through internal/sys", path, sel.Sel.Name)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("checked only %d library files: is the module root %s?", files, root)
	}
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
