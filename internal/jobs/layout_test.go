package jobs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayout_OneConceptPerFile: the runner's files follow a slot's life, one concept each; a
// file past maxFileLines holds more than one and is split.
func TestLayout_OneConceptPerFile(t *testing.T) {
	const maxFileLines = 400
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines, want at most %d", f, n, maxFileLines)
		}
	}
}
