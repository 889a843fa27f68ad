package testenv

import (
	"context"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
	"time"
)

// buildTimeout bounds one go build.
const buildTimeout = 5 * time.Minute

// MustBuild builds the main package pkg, an import path of this module such
// as "scheduler/cmd/scheduler", with the go command on PATH into a directory
// of tb.TempDir, and returns the binary's path (named after pkg's last
// element). It builds without the race detector whatever the test binary was
// built with: -race instruments the test process only.
func MustBuild(tb testing.TB, pkg string) string {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		tb.Fatalf("testenv: the go command is needed to build %s: %v", pkg, err)
	}
	out := filepath.Join(tb.TempDir(), path.Base(pkg))
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	start := time.Now()
	if msg, err := exec.CommandContext(ctx, goBin, "build", "-o", out, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("testenv: go build %s: %v\n%s", pkg, err, msg)
	}
	tb.Logf("built %s in %v", pkg, time.Since(start).Round(time.Millisecond))
	return out
}
