package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// binaries are the programs the suite runs: the scheduler as users get it, and the etcd member
// helper.
type binaries struct {
	scheduler  string
	etcdMember string
}

// buildBinaries builds the programs into a temporary directory with the go command on PATH,
// without the race detector (it instruments the test process only). The etcd member helper is
// built only when the suite starts etcd itself.
func buildBinaries(t *testing.T, withEtcd bool) binaries {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the scheduler: %v", err)
	}
	dir := t.TempDir()
	b := binaries{scheduler: filepath.Join(dir, "scheduler"), etcdMember: filepath.Join(dir, "etcdmember")}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pkgs := map[string]string{"./cmd/scheduler": b.scheduler}
	if withEtcd {
		pkgs["./test/e2e/etcdmember"] = b.etcdMember
	}
	for pkg, out := range pkgs {
		start := time.Now()
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
		}
		t.Logf("built %s in %v", pkg, time.Since(start).Round(time.Millisecond))
	}
	return b
}

// moduleRoot returns the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
