package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/internal/control"
	"scheduler/internal/status"
	"scheduler/internal/testenv"
)

// backfillJob bills two clients per slot, one fenced transaction each, a little apart, so that a
// failover can fall in the middle of a backfill of its hourly slots.
const backfillTestJob = `
  - name: hourly
    schedule: "@hourly"
    timezone: Europe/Berlin
    type: builtin
    builtin: invoices
    params: {clients: 2, period: slot, delay: 40ms}
    overlap: skip
    history: {max_age: 0s}
`

// backfillDay is a past day of the job's zone.
const backfillDay = "2026-01-10"

// TestDaemon_BackfillSurvivesFailover: `scheduler backfill` of a past day's hourly slots, on a
// cluster of two replicas whose leader stops in the middle: the next leader carries on, every
// slot runs once (one run each in the ledger, marked backfilled, the invoices billed once), in
// order, and the command prints the progress and exits 0. Then a range of more than 100 slots
// without --yes is refused with status 2 and nothing requested, and a backfill of slots that
// succeeded skips them all unless --rerun, whose runs bill nothing twice.
func TestDaemon_BackfillSurvivesFailover(t *testing.T) {
	for name, dsn := range map[string]func(t *testing.T) string{
		"postgres": func(t *testing.T) string { return testenv.MustDatabase(t) },
		"sqlite":   func(t *testing.T) string { return "" },
	} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, dsn(t), backfillTestJob)
			a := c.start("a")
			c.wait("a leads", func() bool { l := c.status().Leader; return l != nil && l.Node == "a" })
			if dsn := c.dsn; dsn != "" {
				c.start("b")
			}

			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			backfillDone := backfillDayInBackground(ctx, t, c)
			backfilled := func() []scheduler.Run {
				var rs []scheduler.Run
				for _, r := range c.history("hourly") {
					if r.Backfill {
						rs = append(rs, r)
					}
				}
				return rs
			}
			c.wait("a third of the slots backfilled", func() bool { return countStatus(backfilled(), scheduler.StatusSucceeded) >= 8 })
			if err := a.stop(t); err != nil {
				t.Fatalf("stop a: %v", err)
			}
			if c.dsn == "" {
				// SQLite is one node's store: the same node starts again and carries on.
				c.start("a2")
			}
			code, out, errOut := backfillDone()
			if code != 0 || !strings.Contains(out, "backfill hourly: 24/24 slots (24 succeeded): done") {
				t.Fatalf("backfill: exit %d, output:\n%s%s", code, out, errOut)
			}
			if !strings.Contains(out, "backfill hourly: 24 slots from 2026-01-10T00:00:00+01:00 to 2026-01-10T23:00:00+01:00 requested") {
				t.Fatalf("output does not say what was requested:\n%s", out)
			}
			runs := backfilled()
			if len(runs) != 24 {
				t.Fatalf("%d backfilled runs, want 24: %+v", len(runs), runs)
			}
			tokens := map[int64]bool{}
			seen := map[time.Time]bool{}
			for _, r := range runs {
				tokens[r.Token] = true
				seen[r.ScheduledAt] = true
				if r.Status != scheduler.StatusSucceeded || r.BackfillID == 0 || !strings.HasPrefix(r.Output, "billed 2 of 2 clients") && !strings.Contains(r.Output, "already billed") {
					t.Fatalf("run %+v: want succeeded, marked, its clients billed", r)
				}
			}
			if len(seen) != 24 || len(tokens) != 2 {
				t.Fatalf("%d distinct slots under tokens %v: want 24 under the two leaders' tokens", len(seen), tokens)
			}
			if c.dsn != "" {
				for at, n := range invoicesBySlot(t, ctx, c.dsn) {
					if n != 2 {
						t.Fatalf("slot %s billed %d invoices, want 2", at, n)
					}
				}
			}
			if text := c.cli("history", "hourly", "--limit", "30"); strings.Count(text, "(backfill)") != 24 {
				t.Fatalf("history does not mark the backfilled run:\n%s", text)
			}

			// More than 100 slots without --yes: refused, nothing requested.
			code, stdout, stderr := runCLI(t, "backfill", "hourly", "--from", "2026-01-01", "--to", "2026-01-09", "--config", c.path)
			if code != 2 || !strings.Contains(stderr, "216 slots") || !strings.Contains(stderr, "--yes") {
				t.Fatalf("216 slots without --yes: exit %d, %s%s", code, stdout, stderr)
			}
			if n := len(backfillRequests(t, ctx, c)); n != 1 {
				t.Fatalf("%d backfill requests after the refusal, want the first only", n)
			}

			// The same day again: every slot succeeded already, so all are skipped; with --rerun
			// each runs again as the next attempt of its run, and bills nothing twice.
			if out := c.cli("backfill", "hourly", "--from", backfillDay+"T10:00:00+01:00", "--to", backfillDay+"T11:00:00+01:00"); !strings.Contains(out, "2/2 slots (0 succeeded, 2 skipped): done") {
				t.Fatalf("backfill of succeeded slots:\n%s", out)
			}
			if out := c.cli("backfill", "hourly", "--rerun", "--from", backfillDay+"T10:00:00+01:00", "--to", backfillDay+"T11:00:00+01:00"); !strings.Contains(out, "2/2 slots (2 succeeded): done") {
				t.Fatalf("rerun:\n%s", out)
			}
			for _, r := range c.history("hourly") {
				if h := r.ScheduledAt.In(time.FixedZone("CET", 3600)).Hour(); (h == 10 || h == 11) && (r.Attempt < 2 || !strings.Contains(r.Output, "(2 already billed)")) {
					t.Fatalf("rerun run %+v: want a later attempt that found its clients billed", r)
				}
			}
			if c.dsn != "" {
				for at, n := range invoicesBySlot(t, ctx, c.dsn) {
					if n != 2 {
						t.Fatalf("after the rerun, slot %s has %d invoices, want 2", at, n)
					}
				}
			}

			// --detach only submits; the leader works through it all the same. A request for a
			// job the leader's table lacks (written by a CLI with another table) is refused.
			if out := c.cli("backfill", "hourly", "--detach", "--from", backfillDay+"T12:00:00+01:00", "--to", backfillDay+"T12:00:00+01:00"); !strings.Contains(out, "1 slots") || strings.Contains(out, "done") {
				t.Fatalf("--detach:\n%s", out)
			}
			s, err := control.New(c.etcd.Client(t), "/test/election")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.SubmitBackfill(ctx, control.Backfill{Job: "ghost", ID: 1, From: time.Now().Add(-time.Hour), To: time.Now()}); err != nil {
				t.Fatal(err)
			}
			c.wait("the detached request done and the ghost's refused", func() bool {
				var done, refused bool
				for _, b := range backfillRequests(t, ctx, c) {
					done = done || b.Job == "hourly" && b.Total == 1 && b.State == control.BackfillDone
					refused = refused || b.Job == "ghost" && b.State == control.BackfillRefused && strings.Contains(b.Error, "no such job")
				}
				return done && refused
			})
		})
	}
}

// backfillDayInBackground runs `backfill hourly` over backfillDay against c while the test goes
// on; the returned wait gives its exit code, stdout and stderr once it ends, and fails the test
// when ctx ends first.
func backfillDayInBackground(ctx context.Context, t *testing.T, c *cluster) (wait func() (code int, out, errOut string)) {
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		err := run(ctx, []string{"backfill", "hourly", "--from", backfillDay, "--to", backfillDay, "--config", c.path}, nil, &out, &errOut)
		done <- exitCode(err, &errOut)
	}()
	return func() (int, string, string) {
		t.Helper()
		select {
		case code := <-done:
			return code, out.String(), errOut.String()
		case <-ctx.Done():
			t.Fatalf("backfill did not finish; output:\n%s%s", &out, &errOut)
			return 0, "", ""
		}
	}
}

// invoicesBySlot counts the invoices of each slot of the backfilled day (period: slot) in the
// Postgres store.
func invoicesBySlot(t *testing.T, ctx context.Context, dsn string) map[string]int {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT month, count(*) FROM invoices WHERE month BETWEEN $1 AND $2 GROUP BY month`,
		"2026-01-09T23:00:00Z", "2026-01-10T22:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	var (
		month string
		n     int
	)
	if _, err := pgx.ForEachRow(rows, []any{&month, &n}, func() error { out[month] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(out) != 24 {
		t.Fatalf("invoices of %d slots, want 24: %v", len(out), out)
	}
	return out
}

// backfillRequests returns the cluster's backfill requests from its etcd.
func backfillRequests(t *testing.T, ctx context.Context, c *cluster) []control.Backfill {
	t.Helper()
	s, err := control.New(c.etcd.Client(t), "/test/election")
	if err != nil {
		t.Fatal(err)
	}
	bs, err := s.Backfills(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// TestCLI_BackfillRefusesBadRanges: bad ranges, an unknown job, an unknown overlap and a range
// the job's retention would prune at once end `backfill` with status 2 before it connects
// anywhere, each with a message saying why.
func TestCLI_BackfillRefusesBadRanges(t *testing.T) {
	path := configtest.Write(t, "single_node: true\netcd: {endpoints: [127.0.0.1:1]}\njobs:\n  - name: hourly\n    schedule: \"@hourly\"\n    type: sql\n    sql: x\n    history: {max_age: 0s}\n  - name: other\n    schedule: \"@daily\"\n    type: sql\n    sql: x\n  - name: kept\n    schedule: \"@hourly\"\n    type: sql\n    sql: x\n    history: {max_age: 24h, max_runs: 5}\n")
	future := time.Now().Add(48 * time.Hour).UTC().Format(time.DateOnly)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"FromAfterTo", []string{"hourly", "--from", "2026-01-10", "--to", "2026-01-09"}, "is after --to"},
		{"ToInTheFuture", []string{"hourly", "--from", "2026-01-10", "--to", future}, "is in the future"},
		{"NoRange", []string{"hourly", "--from", "2026-01-10"}, "--from and --to are required"},
		{"BadTime", []string{"hourly", "--from", "yesterday", "--to", "2026-01-10"}, `--from "yesterday": want an RFC 3339 time`},
		{"UnknownJob", []string{"hourlyy", "--from", "2026-01-10", "--to", "2026-01-10"}, `no job named "hourlyy" in the configuration; did you mean "hourly"?; its jobs: hourly, other`},
		{"UnknownOverlap", []string{"hourly", "--from", "2026-01-10", "--to", "2026-01-10", "--overlap", "replace"}, "want skip, queue or allow"},
		{"NoSlots", []string{"other", "--from", "2026-01-10T01:00:00Z", "--to", "2026-01-10T02:00:00Z"}, "no slots"},
		{"OlderThanMaxAge", []string{"kept", "--from", "2026-01-10T01:00:00Z", "--to", "2026-01-10T02:00:00Z"}, "older than the job's history.max_age (24h0m0s)"},
		{"MoreThanMaxRuns", []string{"kept", "--from", time.Now().Add(-12 * time.Hour).UTC().Format(time.RFC3339), "--to", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, "more than the job's history.max_runs (5)"},
		{"TooManyWithoutYes", []string{"hourly", "--from", "2026-01-01", "--to", "2026-01-05T04:00:00Z"}, "101 slots from 2026-01-01T00:00:00Z to 2026-01-05T04:00:00Z: more than 100; pass --yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"backfill", "--config", path}, tc.args...)...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, tc.want)
			}
		})
	}
}

// TestDaemon_BackfillOnStoreControl: with an election backend other than etcd the request lives
// in the store's control_backfill; a backfill survives its leader's stop there too, each slot
// run once.
func TestDaemon_BackfillOnStoreControl(t *testing.T) {
	c := newBackendCluster(t, config.BackendPostgres, "")
	body, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.path, append(body, backfillTestJob...), 0o600); err != nil {
		t.Fatal(err)
	}
	c.start("a")
	c.start("b")
	var leader *status.Leader
	c.wait("a leader", func() bool { leader = c.status().Leader; return leader != nil })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	backfillDone := backfillDayInBackground(ctx, t, c)
	backfilled := func() map[time.Time]scheduler.Run {
		rs := map[time.Time]scheduler.Run{}
		for _, r := range c.history("hourly") {
			if r.Backfill {
				if _, dup := rs[r.ScheduledAt]; dup {
					t.Fatalf("slot %s has two runs", r.ScheduledAt)
				}
				rs[r.ScheduledAt] = r
			}
		}
		return rs
	}
	c.wait("a third of the slots backfilled", func() bool { return len(backfilled()) >= 8 })
	if err := c.replicas[leader.Node].stop(t); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := backfillDone(); code != 0 || !strings.Contains(out, "24/24 slots (24 succeeded): done") {
		t.Fatalf("backfill: exit %d, output:\n%s%s", code, out, errOut)
	}
	tokens := map[int64]bool{}
	for _, r := range backfilled() {
		tokens[r.Token] = true
		if r.Status != scheduler.StatusSucceeded {
			t.Fatalf("run %+v: want succeeded", r)
		}
	}
	if len(backfilled()) != 24 || len(tokens) != 2 {
		t.Fatalf("%d backfilled slots under tokens %v: want 24 under the two leaders' tokens", len(backfilled()), tokens)
	}
	for at, n := range invoicesBySlot(t, ctx, c.dsn) {
		if n != 2 {
			t.Fatalf("slot %s billed %d invoices, want 2", at, n)
		}
	}
}
