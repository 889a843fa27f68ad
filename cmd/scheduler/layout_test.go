package main

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

// The bounds of the command's layout, comments included: past them a file holds more than one
// concept, or a package more than one job, and is split.
const (
	maxFileLines    = 400
	maxPackageLines = 2500
)

// commandPackages returns the directories of the command's packages: main and those under
// internal (its configuration, the coordinator backends, the cluster's view, ...).
func commandPackages(t *testing.T) []string {
	t.Helper()
	dirs := []string{"."}
	err := filepath.WalkDir("internal", func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if files, _ := filepath.Glob(filepath.Join(path, "*.go")); len(files) > 0 {
				dirs = append(dirs, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// sourceFiles returns the non-test Go files of the package in dir.
func sourceFiles(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return out
}

// TestLayout_Size: the daemon's wiring and the configuration stay two packages of a size one can
// read, each file one concept.
func TestLayout_Size(t *testing.T) {
	for _, dir := range commandPackages(t) {
		total := 0
		for _, f := range sourceFiles(t, dir) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			n := bytes.Count(b, []byte("\n"))
			total += n
			if n > maxFileLines {
				t.Errorf("%s has %d lines, want at most %d", f, n, maxFileLines)
			}
		}
		if total > maxPackageLines {
			t.Errorf("package %s has %d lines outside its tests, want at most %d", dir, total, maxPackageLines)
		}
	}
}

// TestLayout_ConfigReadInOnePlace: the configuration file is read, decoded and validated by
// package config alone, so `validate`, `run` and a reload cannot read it in different ways; main
// imports none of the decoders.
func TestLayout_ConfigReadInOnePlace(t *testing.T) {
	decoders := []string{"github.com/spf13/viper", "github.com/go-viper/mapstructure/v2", "go.yaml.in/yaml/v3"}
	for _, f := range sourceFiles(t, ".") {
		af, err := parser.ParseFile(gotoken.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, d := range decoders {
				if p == d {
					t.Errorf("%s imports %s, want the configuration read only by package config", f, p)
				}
			}
		}
	}
}
