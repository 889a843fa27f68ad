package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

// runCLI runs the command line in-process and returns its exit status and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIEnv(t, nil, args...)
}

// runCLIEnv runs the command line in-process with the environment env.
func runCLIEnv(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err := run(ctx, args, env, &out, &errOut)
	code = exitCode(err, &errOut)
	return code, out.String(), errOut.String()
}

func TestCLI_Validate(t *testing.T) {
	sample := filepath.Join("..", "..", "configs", "scheduler.yaml")
	t.Run("AcceptsTheSample", func(t *testing.T) {
		code, out, errOut := runCLI(t, "validate", "--config", sample)
		if code != 0 || !strings.Contains(out, "valid, 3 job(s)") {
			t.Fatalf("code=%d out=%q err=%q", code, out, errOut)
		}
	})
	t.Run("RefusesBadConfigWithStatus2", func(t *testing.T) {
		path := configtest.Write(t, "jobs:\n  - name: a\n    schedule: '61 * * * *'\n    type: sql\n    sql: x\n")
		code, _, errOut := runCLI(t, "validate", "--config", path)
		if code != 2 || !strings.Contains(errOut, "jobs[0].schedule") {
			t.Fatalf("code=%d err=%q, want 2 and the key path", code, errOut)
		}
	})
	t.Run("MissingFileIsStatus2", func(t *testing.T) {
		code, _, errOut := runCLI(t, "validate", "--config", filepath.Join(t.TempDir(), "nope.yaml"))
		if code != 2 || !strings.Contains(errOut, "nope.yaml") {
			t.Fatalf("code=%d err=%q", code, errOut)
		}
	})
	t.Run("ExtraArgumentIsStatus2", func(t *testing.T) {
		if code, _, errOut := runCLI(t, "validate", "extra", "--config", sample); code != 2 {
			t.Fatalf("code=%d err=%q", code, errOut)
		}
	})
}

func TestCLI_Usage(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"validate", "--no-such-flag"}, {"version", "x"}} {
		if code, _, errOut := runCLI(t, args...); code != 2 {
			t.Errorf("%q: code=%d err=%q, want 2", args, code, errOut)
		}
	}
}

func TestCLI_Version(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "scheduler ") || !strings.Contains(out, "go1.") {
		t.Fatalf("code=%d out=%q", code, out)
	}
}
