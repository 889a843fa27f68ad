package jobs

import (
	"bytes"
	"go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// nonTestFiles returns the non-test Go files matching pattern.
func nonTestFiles(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	return out
}

func lines(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// TestLayout_OneConceptPerFile: the runner's files, and those of its own packages, follow a
// slot's life, one concept each; a file past maxFileLines holds more than one and is split.
func TestLayout_OneConceptPerFile(t *testing.T) {
	const maxFileLines = 400
	for _, pattern := range []string{"*.go", "internal/*/*.go"} {
		for _, f := range nonTestFiles(t, pattern) {
			if n := lines(t, f); n > maxFileLines {
				t.Errorf("%s has %d lines, want at most %d", f, n, maxFileLines)
			}
		}
	}
}

// TestLayout_PackageSize: the runner does one job; a piece that stands alone lives in a package
// of its own under internal/, so the runner stays about maxPackageLines (comments included).
func TestLayout_PackageSize(t *testing.T) {
	const maxPackageLines = 2600
	n := 0
	for _, f := range nonTestFiles(t, "*.go") {
		n += lines(t, f)
	}
	if n > maxPackageLines {
		t.Errorf("package jobs has %d lines outside its tests, want at most %d: split a piece that stands alone into internal/", n, maxPackageLines)
	}
}

// TestLayout_OwnPackagesStandAlone: the runner's own packages know nothing of it: of the
// scheduler's packages they import only the run vocabulary, the slot math and the runner's
// clock and backoff, so each has a small interface and can be read and tested alone.
func TestLayout_OwnPackagesStandAlone(t *testing.T) {
	allowed := map[string]bool{
		"scheduler":                                true,
		"scheduler/internal/schedule":              true,
		"scheduler/internal/jobs/internal/clock":   true,
		"scheduler/internal/jobs/internal/backoff": true,
	}
	files := nonTestFiles(t, "internal/*/*.go")
	if len(files) == 0 {
		t.Fatal("no packages under internal/")
	}
	for _, f := range files {
		af, err := parser.ParseFile(gotoken.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if (p == "scheduler" || strings.HasPrefix(p, "scheduler/")) && !allowed[p] {
				t.Errorf("%s imports %s, want only the run vocabulary, schedule, clock and backoff", f, p)
			}
		}
	}
}
