package kinds

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"scheduler"
)

// testEnviron is the daemon environment the exec tests inherit from.
var testEnviron = []string{"PATH=/usr/bin:/bin"}

func mustExec(t *testing.T, cfg ExecConfig) *ExecJob {
	t.Helper()
	if cfg.Environ == nil {
		cfg.Environ = testEnviron
	}
	j, err := NewExec(cfg)
	if err != nil {
		t.Fatalf("NewExec(%v): %v", cfg.Command, err)
	}
	return j
}

// mustScript returns a job running script under sh with DIR naming a fresh directory for it to
// write into, and that directory.
func mustScript(t *testing.T, script string, grace time.Duration) (*ExecJob, string) {
	t.Helper()
	dir := t.TempDir()
	return mustExec(t, ExecConfig{Command: []string{"sh", "-c", script}, Env: map[string]string{"DIR": dir}, KillGrace: grace}), dir
}

// noLeaks checks at the end of t that it left no goroutine behind.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func testRun() scheduler.Attempt {
	return scheduler.Attempt{Job: "nightly", Slot: time.Date(2024, 3, 10, 7, 0, 0, 0, time.UTC), Token: 42, Attempt: 1, RunID: "r1"}
}

// secretFencer gives every run the same secret; the exec job asks it for nothing else.
type secretFencer struct {
	scheduler.Fencer
	secret string
}

func (f secretFencer) RunSecret(context.Context, string) (string, error) { return f.secret, nil }

func TestExecJob_Environment(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("OnlyTheAllowedVariablesPass", func(t *testing.T) {
		j := mustExec(t, ExecConfig{
			Command: []string{"env"},
			Environ: []string{
				"PATH=/usr/bin:/bin", "HOME=/home/sched", "LANG=C.UTF-8", "LC_TIME=de_DE.UTF-8", "TZ=UTC",
				"SCHEDULER_STORE_DSN=postgres://u:secret@db/x", "SCHEDULER_ETCD_PASSWORD=pw",
				"PGPASSWORD=pgsecret", "AWS_SECRET_ACCESS_KEY=x", "FOO=bar", "NOEQUALS",
				EnvFenceToken + "=1", // a daemon started from a job must not pass its own run on
				EnvRunSecret + "=1.leak",
			},
			Env: map[string]string{
				"HOME":                     "/srv/job",
				"GREETING":                 "hello world",
				"SCHEDULER_ETCD_ENDPOINTS": "http://etcd:2379", // the job's own env may set anything else
			},
		})
		run := scheduler.Attempt{
			Job: "nightly", Slot: time.Date(2024, 3, 10, 3, 0, 0, 0, ny), Token: 42, Attempt: 2,
			RunID: "nightly@2024-03-10T07:00:00Z",
		}
		out, err := j.Execute(ctx, run)
		if err != nil {
			t.Fatalf("Execute: %v\n%s", err, out)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			k, v, _ := strings.Cut(line, "=")
			got[k] = v
		}
		want := map[string]string{
			"PATH": "/usr/bin:/bin", "HOME": "/srv/job", "LANG": "C.UTF-8", "LC_TIME": "de_DE.UTF-8", "TZ": "UTC",
			"GREETING":                 "hello world",
			"SCHEDULER_ETCD_ENDPOINTS": "http://etcd:2379",
			"SCHEDULER_FENCE_TOKEN":    "42",
			"SCHEDULER_JOB":            "nightly",
			"SCHEDULER_SCHEDULED_AT":   "2024-03-10T03:00:00-04:00",
			"SCHEDULER_RUN_ID":         "nightly@2024-03-10T07:00:00Z",
			"SCHEDULER_ATTEMPT":        "2",
		}
		if !maps.Equal(got, want) {
			t.Fatalf("environment:\n got %v\nwant %v", got, want)
		}
	})

	t.Run("ScriptSeesTheRun", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "seen")
		j := mustExec(t, ExecConfig{
			Command: []string{"sh", "-c", `printf '%s|%s|%s|%s|%s\n' "$SCHEDULER_FENCE_TOKEN" "$SCHEDULER_JOB" \
				"$SCHEDULER_SCHEDULED_AT" "$SCHEDULER_RUN_ID" "$SCHEDULER_ATTEMPT" > "$OUT"`},
			Env: map[string]string{"OUT": file},
		})
		if out, err := j.Execute(ctx, testRun()); err != nil {
			t.Fatalf("Execute: %v\n%s", err, out)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if want := "42|nightly|2024-03-10T07:00:00Z|r1|1\n"; string(b) != want {
			t.Fatalf("script saw %q, want %q", b, want)
		}
	})

	t.Run("RunSecret", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "seen")
		j := mustExec(t, ExecConfig{
			Command: []string{"sh", "-c", `printf '%s' "$SCHEDULER_RUN_SECRET" > "$OUT"; echo "mine: $SCHEDULER_RUN_SECRET"`},
			Env:     map[string]string{"OUT": file},
		})
		run := testRun()
		run.Fencer = secretFencer{secret: "1.0123abcd"}
		live := &liveRecorder{wrote: make(chan struct{}, 1)}
		run.Live = live
		out, err := j.Execute(ctx, run)
		if err != nil {
			t.Fatalf("Execute: %v\n%s", err, out)
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != "1.0123abcd" {
			t.Fatalf("script saw secret %q (err %v), want the store's", b, err)
		}
		if out != "mine: 1.[redacted]\n" {
			t.Fatalf("output %q, want the secret redacted", out)
		}
		live.mu.Lock()
		followed := live.buf.String()
		live.mu.Unlock()
		if followed != out {
			t.Fatalf("live output %q, want the stored one, redacted: %q", followed, out)
		}
		if _, err := NewExec(ExecConfig{Command: []string{"true"}, Env: map[string]string{EnvRunSecret: "x"}}); err == nil {
			t.Fatalf("a job's env setting %s was accepted", EnvRunSecret)
		}
	})

	t.Run("DefaultPath", func(t *testing.T) {
		j := mustExec(t, ExecConfig{Command: []string{"env"}, Environ: []string{"HOME=/x"}})
		out, err := j.Execute(ctx, testRun())
		if err != nil {
			t.Fatalf("Execute: %v", err)
		}
		if !strings.Contains(out, "PATH="+defaultPath+"\n") {
			t.Fatalf("output %q has no PATH=%s", out, defaultPath)
		}
	})
}

func TestNewExec_Invalid(t *testing.T) {
	_, err := NewExec(ExecConfig{
		Env:       map[string]string{"A=B": "x", EnvFenceToken: "1", "OK": "a\x00b"},
		KillGrace: -time.Second,
	})
	if err == nil {
		t.Fatal("NewExec accepted an invalid config")
	}
	for _, want := range []string{"command:", `invalid variable name "A=B"`, "env.SCHEDULER_FENCE_TOKEN:", "env.OK:", "kill grace:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestExecJob_Result(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello"), []byte("#!/bin/sh\necho hello from $0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("echo no\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		cfg       ExecConfig
		wantOut   string
		wantExit  int // -1: no exit status in the error
		permanent bool
		errHas    string
	}{
		{"Success", ExecConfig{Command: []string{"sh", "-c", "echo ok"}}, "ok\n", 0, false, ""},
		{"InterleavedOutput", ExecConfig{Command: []string{"sh", "-c", "echo a; echo b >&2; echo c"}}, "a\nb\nc\n", 0, false, ""},
		{"ExitStatus", ExecConfig{Command: []string{"sh", "-c", "echo partial; exit 3"}}, "partial\n", 3, false, "exit status 3"},
		{"CommandNotFoundInsideScript", ExecConfig{Command: []string{"sh", "-c", "no-such-cmd-xyz"}}, "", 127, false, "exit status 127"},
		{"RelativeToDir", ExecConfig{Command: []string{"./hello"}, Dir: dir}, "hello from ./hello\n", 0, false, ""},
		{"MissingProgram", ExecConfig{Command: []string{"no-such-program-xyz", "arg"}}, "", -1, true, "program no-such-program-xyz: not found in PATH /usr/bin:/bin"},
		{"MissingPath", ExecConfig{Command: []string{"/nonexistent/prog"}}, "", -1, true, "program /nonexistent/prog:"},
		{"NotExecutable", ExecConfig{Command: []string{filepath.Join(dir, "plain")}}, "", -1, true, "not executable"},
		{"MissingDir", ExecConfig{Command: []string{"sh", "-c", "true"}, Dir: filepath.Join(dir, "nope")}, "", -1, true, "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := mustExec(t, tt.cfg).Execute(ctx, testRun())
			if tt.wantOut != "" && !strings.HasSuffix(out, tt.wantOut) {
				t.Errorf("output = %q, want %q", out, tt.wantOut)
			}
			if tt.wantExit == 0 {
				if err != nil {
					t.Fatalf("Execute: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Execute succeeded, want an error")
			}
			if scheduler.IsPermanent(err) != tt.permanent {
				t.Errorf("IsPermanent(%v) = %v, want %v", err, scheduler.IsPermanent(err), tt.permanent)
			}
			if !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("error %q does not contain %q", err, tt.errHas)
			}
			var ee *exec.ExitError
			if tt.wantExit > 0 && (!errors.As(err, &ee) || ee.ExitCode() != tt.wantExit) {
				t.Errorf("error %v: want exit code %d", err, tt.wantExit)
			}
		})
	}

	t.Run("CancelledBeforeStart", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		ccancel()
		marker := filepath.Join(dir, "started")
		_, err := mustExec(t, ExecConfig{Command: []string{"touch", marker}}).Execute(cctx, testRun())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if _, statErr := os.Stat(marker); statErr == nil {
			t.Fatalf("program ran although ctx was done")
		}
	})
}

func TestExecJob_OutputCap(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	// 6 + 2000*41 + 4 = 82010 bytes.
	script := `printf 'BEGIN\n'; i=0; while [ $i -lt 2000 ]; do echo 0123456789012345678901234567890123456789; i=$((i+1)); done; printf 'END\n'`
	out, err := mustExec(t, ExecConfig{Command: []string{"sh", "-c", script}, OutputLimit: 1024}).Execute(ctx, testRun())
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if !strings.HasPrefix(out, "BEGIN\n") || !strings.HasSuffix(out, "END\n") {
		t.Fatalf("output does not keep head and tail: %q...%q", out[:20], out[len(out)-20:])
	}
	m := regexp.MustCompile(`\n\[\.\.\. (\d+) bytes omitted \.\.\.\]\n`).FindStringSubmatchIndex(out)
	if m == nil {
		t.Fatalf("no omission marker in %q", out)
	}
	omitted, _ := strconv.Atoi(out[m[2]:m[3]])
	kept := len(out) - (m[1] - m[0]) // the marker's own newline before it is added only after a cut line
	if kept > 1024 || kept+omitted < 82010-1 || kept+omitted > 82010 {
		t.Fatalf("kept %d + omitted %d, want <= 1024 kept of 82010", kept, omitted)
	}
}

// groupState reads the process group and state of pid from /proc; ok is false once it is gone.
func groupState(pid int) (pgrp int, state string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	pgrp, _ = strconv.Atoi(f[2])
	return pgrp, f[0], true
}

// assertGroupGone fails t if a process of group pgid has not exited. kill(-pgid, 0) must fail
// with ESRCH, unless every member left is a zombie: killed, but with no init here to reap it.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return
	}
	entries, rerr := os.ReadDir("/proc")
	if rerr != nil {
		t.Fatalf("kill(-%d, 0) = %v and /proc unreadable: %v", pgid, err, rerr)
	}
	for _, e := range entries {
		pid, perr := strconv.Atoi(e.Name())
		if perr != nil {
			continue
		}
		if g, state, ok := groupState(pid); ok && g == pgid && state != "Z" {
			t.Fatalf("process %d of group %d is still alive (state %s)", pid, pgid, state)
		}
	}
}

// readPID waits for a script to write its pid line to file.
func readPID(ctx context.Context, t *testing.T, file string) int {
	t.Helper()
	for {
		b, err := os.ReadFile(file)
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			return pid
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", file, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

type execResult struct {
	out string
	err error
}

func TestExecJob_Cancel(t *testing.T) {
	noLeaks(t)
	// Each script writes its own pid (the group's id) and its background child's, then waits.
	const tree = `sleep 100 & echo $! > "$DIR/child"; echo $$ > "$DIR/leader"; wait`
	tests := []struct {
		name       string
		script     string
		grace      time.Duration
		wantSignal syscall.Signal // what ended the leader
	}{
		// With an hour of grace the run can only end in time if SIGTERM ended the whole tree.
		{"TermEndsTheTree", tree, time.Hour, syscall.SIGTERM},
		{"KillAfterGraceWhenTermIgnored", `trap "" TERM; ` + tree, 50 * time.Millisecond, syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
			defer cancel()
			j, dir := mustScript(t, tt.script, tt.grace)
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			done := make(chan execResult, 1)
			go func() {
				out, err := j.Execute(runCtx, testRun())
				done <- execResult{out, err}
			}()
			leader := readPID(ctx, t, filepath.Join(dir, "leader"))
			child := readPID(ctx, t, filepath.Join(dir, "child"))
			if g, _, ok := groupState(child); !ok || g != leader {
				t.Fatalf("child %d in group %d, want group %d", child, g, leader)
			}
			stop()
			var res execResult
			select {
			case res = <-done:
			case <-ctx.Done():
				t.Fatalf("Execute did not return after cancellation")
			}
			assertGroupGone(t, leader)
			if _, state, ok := groupState(child); ok && state != "Z" {
				t.Fatalf("grandchild %d survived (state %s)", child, state)
			}
			if !errors.Is(res.err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", res.err)
			}
			var ee *exec.ExitError
			if !errors.As(res.err, &ee) {
				t.Fatalf("err = %v, want the exit status too", res.err)
			}
			if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != tt.wantSignal {
				t.Fatalf("leader ended by %v, want signal %v", ee, tt.wantSignal)
			}
		})
	}
}

func TestExecJob_Stragglers(t *testing.T) {
	noLeaks(t)
	tests := []struct {
		name   string
		script string
		grace  time.Duration
	}{
		// The straggler holds the output pipe open: without ending it the run would never end.
		{"HoldingOutput", `sleep 100 & echo $! > "$DIR/child"; echo done`, time.Hour},
		{"DetachedOutput", `sleep 100 >/dev/null 2>&1 & echo $! > "$DIR/child"; echo done`, time.Hour},
		{"IgnoringTerm", `trap "" TERM; sleep 100 & echo $! > "$DIR/child"; echo done`, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
			defer cancel()
			j, dir := mustScript(t, tt.script, tt.grace)
			out, err := j.Execute(ctx, testRun())
			if err != nil || out != "done\n" {
				t.Fatalf("Execute = %q, %v; want done, nil", out, err)
			}
			child := readPID(ctx, t, filepath.Join(dir, "child"))
			if _, state, ok := groupState(child); ok && state != "Z" {
				t.Fatalf("straggler %d outlived the run (state %s)", child, state)
			}
		})
	}
}
