package fence

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// measured matches the figures of measurements in prose: durations in
// milliseconds or microseconds, "about N", ratios, and counts with thousands
// separators.
var measured = regexp.MustCompile(`about [0-9]|[0-9]+(\.[0-9]+)? ?(ms|µs)\b|×|[0-9],[0-9]{3}`)

// TestComments_HaveNoFigures keeps measured figures out of the package's
// comments, where they would rot: they belong in BENCHMARKS.md.
func TestComments_HaveNoFigures(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, g := range f.Comments {
			for _, c := range g.List {
				if m := measured.FindString(c.Text); m != "" {
					t.Errorf("%s: comment has a figure %q: %s", fset.Position(c.Pos()), m, c.Text)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files found")
	}
}
