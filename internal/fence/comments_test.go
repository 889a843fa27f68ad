package fence

import (
	"go/parser"
	"go/token"
	"io/fs"
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

// TestComments_HaveNoFigures keeps measured figures out of the comments of
// the package and of its backends, where they would rot: they belong in
// BENCHMARKS.md.
func TestComments_HaveNoFigures(t *testing.T) {
	files, err := sourceFiles(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
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

// sourceFiles returns the non-test Go files under dir, its subpackages'
// included.
func sourceFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return err
	})
	return files, err
}
