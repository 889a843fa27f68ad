package lease

import (
	"go/parser"
	gotoken "go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLayout_Leaf: the package is a leaf every backend may import, so it
// imports only the run vocabulary and the standard library (no logger, no
// client of any server); leasetest adds only this package and testenv, the
// servers' test helpers its contract tests wait with.
func TestLayout_Leaf(t *testing.T) {
	for pattern, allowed := range map[string]map[string]bool{
		"*.go":           {"scheduler": true},
		"leasetest/*.go": {"scheduler": true, "scheduler/internal/lease": true, "scheduler/internal/testenv": true},
	} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			n++
			af, err := parser.ParseFile(gotoken.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") || (strings.HasPrefix(p, "scheduler") && !allowed[p]) {
					t.Errorf("%s imports %s, want only the standard library and %v", f, p, allowed)
				}
			}
		}
		if n == 0 {
			t.Fatalf("no files match %s", pattern)
		}
	}
}
