package fence

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxPackageLines is the most lines, comments included, that the non-test
// files of one package may hold before it is split.
const maxPackageLines = 2500

// TestLayout_PackagesStaySmall keeps the store and each of its backends and
// shared parts under maxPackageLines, so that a package stays one job a
// reader can hold.
func TestLayout_PackagesStaySmall(t *testing.T) {
	files, err := sourceFiles(".")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines[filepath.Dir(f)] += bytes.Count(src, []byte("\n"))
	}
	for _, dir := range []string{".", "internal/postgres", "internal/sqlite", "internal/tables", "internal/verdict"} {
		n, ok := lines[dir]
		switch {
		case !ok:
			t.Errorf("package %s: no source files", dir)
		case n > maxPackageLines:
			t.Errorf("package %s: %d lines, want at most %d", dir, n, maxPackageLines)
		}
	}
}

// TestLayout_BackendsDoNotImportTheStore: the store chooses its backend
// and the backends share only the small packages beside them, so imports
// flow one way and no backend reaches the other.
func TestLayout_BackendsDoNotImportTheStore(t *testing.T) {
	files, err := sourceFiles("internal")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string][]string{
		"postgres": {"tables", "verdict"},
		"sqlite":   {"tables", "verdict"},
		"tables":   nil,
		"verdict":  nil,
	}
	fset := token.NewFileSet()
	for _, f := range files {
		pkg := filepath.Base(filepath.Dir(f))
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("%s: package %s is not one of the store's known parts", f, pkg)
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if path == "scheduler/internal/fence" {
				t.Errorf("%s imports the store itself", f)
				continue
			}
			rest, ours := strings.CutPrefix(path, "scheduler/internal/")
			if !ours {
				continue
			}
			part, inFence := strings.CutPrefix(rest, "fence/internal/")
			if !inFence || !slices.Contains(ok, part) {
				t.Errorf("%s imports %s; package %s may import only %v of ours", f, path, pkg, ok)
			}
		}
	}
}
