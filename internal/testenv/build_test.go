package testenv

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestMustBuild(t *testing.T) {
	t.Parallel()
	bin := MustBuild(t, "scheduler/internal/testenv/testdata/hello")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin).CombinedOutput()
	if err != nil {
		t.Fatalf("run %s: %v\n%s", bin, err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "hello from a built binary"; got != want {
		t.Fatalf("output = %q, want %q", got, want)
	}
}
