package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/kinds"
)

// TestParity_ValidateAndRun runs every configuration of testdata/parity through the `validate`
// command and through the daemon's load (what `run` and a reload read before connecting), and
// checks that they agree: both accept, or both refuse with the same problems. A file named
// valid-* must be accepted, invalid-* refused with every problem its "# want:" lines name. A
// NAME.env file beside NAME.yaml holds SCHEDULER_* variables, one VAR=value a line.
func TestParity_ValidateAndRun(t *testing.T) {
	if kinds.CurrentUserSwitch().Check() != nil {
		t.Fatalf("this test runs as root (uid %d): the corpus has exec jobs with a user, which only a daemon that may switch users accepts", os.Geteuid())
	}
	files, err := filepath.Glob(filepath.Join("testdata", "parity", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in testdata/parity (%v)", err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			environ, wants := parityCase(t, path)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			vErr := run(ctx, []string{"validate", "--config", path}, environ, &stdout, &stderr)
			_, dErr := config.LoadForRun(path, environ, kinds.CurrentUserSwitch())

			if got, want := problemsOf(t, "validate", vErr), problemsOf(t, "run", dErr); !slices.Equal(got, want) {
				t.Fatalf("validate and run disagree:\nvalidate: %q\nrun:      %q", got, want)
			}
			switch valid := strings.HasPrefix(name, "valid-"); {
			case valid && vErr != nil:
				t.Fatalf("both refuse a valid configuration: %v", vErr)
			case valid && !strings.Contains(stdout.String(), ": valid, "):
				t.Fatalf("validate printed %q, want the file reported valid", stdout.String())
			case !valid && vErr == nil:
				t.Fatalf("both accept an invalid configuration (validate printed %q)", stdout.String())
			}
			for _, w := range wants {
				if !strings.Contains(vErr.Error(), w) {
					t.Errorf("no problem says %q:\n%v", w, vErr)
				}
			}
		})
	}
}

// parityCase reads the environment of a corpus file and the problems its "# want:" lines name.
func parityCase(t *testing.T, path string) (environ, wants []string) {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if w, ok := strings.CutPrefix(sc.Text(), "# want: "); ok {
			wants = append(wants, w)
		}
	}
	envFile := strings.TrimSuffix(path, ".yaml") + ".env"
	b, err := os.ReadFile(envFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
		environ = []string{}
	case err != nil:
		t.Fatal(err)
	default:
		environ = strings.Fields(string(b))
	}
	if strings.HasPrefix(filepath.Base(path), "invalid-") && len(wants) == 0 {
		t.Fatalf("%s names no problem it wants (# want: KEY: message)", path)
	}
	return environ, wants
}

// problemsOf returns the problems of a configuration error, or nil for none; any other error
// fails the test.
func problemsOf(t *testing.T, who string, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("%s: %v, want a configuration error", who, err)
	}
	out := make([]string, len(ce.Problems))
	for i, p := range ce.Problems {
		out[i] = p.String()
	}
	return out
}
