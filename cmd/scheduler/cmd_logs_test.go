package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"scheduler"
)

const logsJobs = `
jobs:
  - name: talk
    schedule: "@yearly"
    type: exec
    command: [/bin/sh, -c, "echo run $SCHEDULER_RUN_ID says hello"]
  - name: quiet
    schedule: "@yearly"
    type: exec
    command: [/bin/true]
  - name: slow
    schedule: "@yearly"
    type: exec
    command: [/bin/sh, -c, "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.4; done"]
`

// TestLogs: `scheduler logs` prints the kept output of a job's latest run, of a run by id and
// of a run by slot, from the real store; its errors name what is wrong and exit as the other
// commands do; -f follows a running exec job from the leader, printing its lines as they come.
func TestLogs(t *testing.T) {
	forEachDaemonStore(t, "", func(t *testing.T, c *cluster) {
		c.writeConfig(logsJobs)
		c.cli("migrate")
		c.start("a")
		c.wait("a leader", func() bool { return c.status().Leader != nil })

		code, _, errOut := runCLI(t, "logs", "slow", "--config", c.path)
		if code != 1 || !strings.Contains(errOut, `job "slow" has no runs in the ledger yet`) {
			t.Fatalf("logs of a job without runs: exit %d, %s", code, errOut)
		}
		c.cli("trigger", "talk")
		c.wait("a run of talk", func() bool { return countStatus(c.history("talk"), scheduler.StatusSucceeded) == 1 })
		time.Sleep(10 * time.Millisecond) // the second trigger's instant differs from the first's
		c.cli("trigger", "talk")
		c.wait("two runs of talk", func() bool { return countStatus(c.history("talk"), scheduler.StatusSucceeded) == 2 })
		runs := c.history("talk") // newest first
		latest, first := runs[0], runs[1]

		t.Run("Latest", func(t *testing.T) {
			if out := c.cli("logs", "talk"); out != fmt.Sprintf("run %d says hello\n", latest.RunID) {
				t.Fatalf("logs talk = %q, want the latest run's output", out)
			}
		})
		t.Run("ByRun", func(t *testing.T) {
			if out := c.cli("logs", "talk", "--run", fmt.Sprint(first.RunID)); out != fmt.Sprintf("run %d says hello\n", first.RunID) {
				t.Fatalf("logs talk --run %d = %q", first.RunID, out)
			}
		})
		t.Run("BySlot", func(t *testing.T) {
			slot := first.ScheduledAt.UTC().Format(time.RFC3339Nano)
			if out := c.cli("logs", "talk", "--slot", slot); out != fmt.Sprintf("run %d says hello\n", first.RunID) {
				t.Fatalf("logs talk --slot %s = %q", slot, out)
			}
		})
		t.Run("Errors", func(t *testing.T) {
			c.cli("trigger", "quiet")
			c.wait("a run of quiet", func() bool { return countStatus(c.history("quiet"), scheduler.StatusSucceeded) == 1 })
			for _, tc := range []struct {
				args []string
				code int
				want string
			}{
				{[]string{"logs", "nope"}, 2, `no job named "nope"; the jobs are: talk, quiet, slow`},
				{[]string{"logs", "talk", "--run", "999999"}, 1, `job "talk" has no run 999999 (see scheduler history talk)`},
				{[]string{"logs", "talk", "--slot", "2001-01-01T00:00:00Z"}, 1, `job "talk" has no run at slot 2001-01-01T00:00:00Z`},
				{[]string{"logs", "talk", "--slot", "yesterday"}, 2, `--slot must be an RFC3339 time`},
				{[]string{"logs", "talk", "--slot", "2001-01-01T00:00:00Z", "--run", "1"}, 2, `--slot and --run name a run each: give one`},
				{[]string{"logs", "talk", "--run", "0"}, 2, `--run must be a run id`},
				{[]string{"logs", "quiet"}, 1, `(slot `},
				{[]string{"logs", "quiet"}, 1, `, succeeded) kept no output`},
				{[]string{"logs"}, 2, `expects a job name`},
			} {
				code, _, errOut := runCLI(t, append(tc.args, "--config", c.path)...)
				if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "scheduler:") != 1 {
					t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
				}
			}
		})
		t.Run("Follow", func(t *testing.T) {
			c.cli("trigger", "slow")
			c.wait("slow running", func() bool { return countStatus(c.history("slow"), scheduler.StatusRunning) == 1 })
			code, _, errOut := runCLI(t, "logs", "slow", "--config", c.path)
			if code != 1 || !strings.Contains(errOut, "is still running: its output is kept when it ends; follow it with -f") {
				t.Fatalf("logs of a running run without -f: exit %d, %s", code, errOut)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, msgs syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- exitCode(run(ctx, []string{"logs", "slow", "-f", "--config", c.path}, nil, &out, &msgs), &msgs)
			}()
			c.wait("the first line followed while the run runs", func() bool { return strings.Contains(out.String(), "line 1\n") })
			if n := countStatus(c.history("slow"), scheduler.StatusRunning); n != 1 || strings.Contains(out.String(), "line 6") {
				t.Fatalf("first line seen with %d runs running and output %q: want it while the run runs", n, out.String())
			}
			if code := <-done; code != 0 {
				t.Fatalf("logs -f: exit %d: %s", code, msgs.String())
			}
			want := "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n"
			if out.String() != want || !strings.Contains(msgs.String(), "ended succeeded") {
				t.Fatalf("logs -f printed %q (stderr %q), want %q and the run's end", out.String(), msgs.String(), want)
			}
		})
	})
}
