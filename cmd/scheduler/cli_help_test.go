package main

import (
	"strings"
	"testing"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

func TestCLI_BareCommandPrintsHelp(t *testing.T) {
	code, out, errOut := runCLI(t)
	if code != 2 || !strings.Contains(errOut, "Available Commands:") || out != "" {
		t.Fatalf("code=%d stdout=%q stderr=%q, want 2 and the help on stderr", code, out, errOut)
	}
	if strings.Contains(errOut, "scheduler: ") {
		t.Errorf("stderr=%q, want the help alone", errOut)
	}
	code, out, _ = runCLI(t, "--help")
	if code != 0 || !strings.Contains(out, "Available Commands:") {
		t.Fatalf("--help: code=%d stdout=%q, want 0 and the help", code, out)
	}
}

func TestCLI_VersionFlag(t *testing.T) {
	_, want, _ := runCLI(t, "version")
	code, out, errOut := runCLI(t, "--version")
	if code != 0 || out != want {
		t.Fatalf("--version: code=%d out=%q err=%q, want 0 and %q", code, out, errOut, want)
	}
}

func TestCLI_DidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stauts"}, `unknown command "stauts"; did you mean "status"?`},
		{[]string{"histroy", "x"}, `did you mean "history"?`},
		{[]string{"status", "--jsn"}, "unknown flag: --jsn; did you mean --json?"},
		{[]string{"history", "x", "--limt", "3"}, "did you mean --limit?"},
		{[]string{"validate", "--confg", "x"}, "did you mean --config?"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: code=%d stderr=%q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	t.Run("NothingNear", func(t *testing.T) {
		code, _, errOut := runCLI(t, "frobnicate")
		if code != 2 || strings.Contains(errOut, "did you mean") {
			t.Errorf("code=%d stderr=%q, want 2 and no suggestion", code, errOut)
		}
	})
	t.Run("JobNames", func(t *testing.T) {
		path := configtest.Write(t, configtest.MinimalJob)
		code, _, errOut := runCLI(t, "next", "bet", "--config", path)
		if code != 2 || !strings.Contains(errOut, `no job named "bet" in the configuration; did you mean "beat"?; its jobs: beat`) {
			t.Errorf("code=%d stderr=%q, want 2, the nearest job and the jobs", code, errOut)
		}
	})
}

// TestCLI_ErrorsPrefixedOnce: every message is printed once with the program's name before it.
func TestCLI_ErrorsPrefixedOnce(t *testing.T) {
	for _, args := range [][]string{{"status", "--jsn"}, {"version", "x"}, {"next"}, {"history", "a", "--limit", "0"}, {"nope"}} {
		_, _, errOut := runCLI(t, args...)
		if !strings.HasPrefix(errOut, "scheduler: ") || strings.Contains(errOut, "scheduler: scheduler") || strings.Contains(errOut, "Error: ") {
			t.Errorf("%q: stderr=%q, want one prefix", args, errOut)
		}
	}
}
