package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs"
	"scheduler/internal/kinds"
	"scheduler/internal/testenv"
)

// proxiedStore opens a migrated Postgres store whose connections all go through a testenv.Proxy.
func proxiedStore(t *testing.T) (*fence.Store, *testenv.Proxy, string) {
	t.Helper()
	dsn := testenv.MustDatabase(t)
	proxied, p := testenv.ProxiedDSN(t, dsn)
	return fencetest.Open(t, fence.Config{DSN: proxied}), p, dsn
}

// TestStore_SkippedClaimAheadClosedAfterBlip: a slot claimed ahead (running, attempt 0) that
// must be skipped when it fires (here: the job was paused meanwhile) is closed. If Postgres
// blips exactly then, the close is retried with the writes that wait for the store: the run
// does not stay running for the rest of the term, for a later leader to take over and run.
func TestStore_SkippedClaimAheadClosedAfterBlip(t *testing.T) {
	store, proxy, _ := proxiedStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var paused atomic.Bool
	exec := &countingExec{}
	spec := testSpec(t, exec, "@every 3s")
	r, err := jobs.New([]jobs.Spec{spec}, jobs.Options{Node: "n1", Ledger: store, Logger: zaptest.NewLogger(t),
		Paused: func(string) bool { return paused.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	leadFor(t, r, 10)

	// Wait for a slot claimed ahead and not started yet (attempt 0), then pause the job and cut
	// the store until after that slot fired.
	claimed := awaitRun(ctx, t, store, "no slot claimed ahead", func(r scheduler.Run) bool {
		return r.Status == scheduler.StatusRunning && r.Attempt == 0 && time.Until(r.ScheduledAt) > 300*time.Millisecond
	})
	paused.Store(true)
	proxy.Cut()
	time.Sleep(time.Until(claimed.ScheduledAt) + 700*time.Millisecond)
	proxy.Resume()

	// Two later slots are recorded skipped (paused): the store is back and the term goes on.
	later := claimed.ScheduledAt.Add(6 * time.Second)
	awaitRun(ctx, t, store, "later slots not recorded", func(r scheduler.Run) bool {
		return !r.ScheduledAt.Before(later) && r.Status == scheduler.StatusSkipped
	})
	runs, err := store.History(ctx, "job", 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		if run.RunID == claimed.RunID && run.Status == scheduler.StatusRunning {
			t.Fatalf("run %d of slot %s is still %s (attempt %d) %s after the store came back, while later slots were recorded: the close of the skipped claim-ahead was dropped",
				run.RunID, run.ScheduledAt.Format(time.RFC3339), run.Status, run.Attempt, time.Since(claimed.ScheduledAt).Round(time.Second))
		}
	}
}

// TestStore_SQLCommitInDoubtNotRunAgain: a sql job's COMMIT reaches the server and commits,
// but the connection is cut before the answer, and the store stays unreachable a little longer
// than the attempt has left. FencedStatements cannot learn the transaction's fate and fails the
// attempt ("may have committed"): that failure is permanent, so a job with retries does not
// run its statements again once the store is back, and the slot's effect lands once.
func TestStore_SQLCommitInDoubtNotRunAgain(t *testing.T) {
	store, proxy, dsn := proxiedStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin := testenv.Connect(ctx, t, dsn)
	// A deferred trigger makes the COMMIT take 2 s, so that the link can be cut while the server
	// commits.
	if _, err := admin.Exec(ctx, `CREATE TABLE public.effects (slot text, n int);
		CREATE FUNCTION public.slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(2); RETURN NULL; END $$;
		CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON public.effects
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.slow_commit();`); err != nil {
		t.Fatal(err)
	}
	job, err := kinds.NewSQL(kinds.SQLConfig{Statements: `INSERT INTO public.effects VALUES (current_setting('scheduler.slot'), 1)`})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t, job, "@yearly")
	spec.Timeout, spec.Retries, spec.RetryBackoff = 5*time.Second, 1, 4*time.Second
	r := newRunner(t, spec, "n1", store)
	leadFor(t, r, 10)
	at := time.Now().UTC().Truncate(time.Second)
	trigger(ctx, t, r, at)

	testenv.Eventually(t, 20*time.Second, 10*time.Millisecond, "the job's COMMIT reached its deferred trigger", func() bool {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	proxy.Cut() // the COMMIT is on the server; its answer is lost, and the store is unreachable for 6 s
	time.Sleep(6 * time.Second)
	proxy.Resume()

	run := waitRun(ctx, t, store, at)
	var rows int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM public.effects`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Fatalf("the slot's sql job wrote %d rows (run %s, attempt %d, error %q): its statements committed, the in-doubt answer was taken for a retryable failure and they ran again",
			rows, run.Status, run.Attempt, run.Error)
	}
}
