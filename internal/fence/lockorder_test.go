package fence

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler"
)

// TestPostgres_StartAndCompleteDoNotDeadlock: a herd's starts are recorded (StartMany) while its
// first outcomes are written (CompleteMany), the runs listed in different orders (starts in table
// order, outcomes as the runs ended). Both lock the runs in run id order, so the database
// never has to break a deadlock between them.
func TestPostgres_StartAndCompleteDoNotDeadlock(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	const n, token, rounds = 400, 5, 8
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = fmt.Sprintf("job%03d", i)
	}
	if err := s.RaiseAll(ctx, jobs, token); err != nil {
		t.Fatal(err)
	}
	before := deadlocks(ctx, t, dsn)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for k := range rounds {
		slots := make([]scheduler.SlotKey, n)
		for i, j := range jobs {
			slots[i] = scheduler.SlotKey{Job: j, At: at.Add(time.Duration(k) * time.Minute)}
		}
		res, err := s.ClaimAheadMany(ctx, token, "n1", slots)
		if err != nil {
			t.Fatal(err)
		}
		refs := make([]scheduler.RunRef, n)
		cs := make([]scheduler.Completion, n)
		for i, r := range res {
			refs[i] = scheduler.RunRef{RunID: r.Run.RunID, Job: r.Run.Job}
			cs[i] = scheduler.Completion{RunID: r.Run.RunID, Job: r.Run.Job, Status: scheduler.StatusSucceeded, Attempt: 1}
		}
		slices.Reverse(cs)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() { _, errs[0] = s.StartMany(ctx, token, refs) })
		wg.Go(func() { _, errs[1] = s.CompleteMany(ctx, token, cs) })
		wg.Wait()
		if err := errorsJoin(errs); err != nil {
			t.Fatal(err)
		}
	}
	if got := deadlocks(ctx, t, dsn) - before; got != 0 {
		t.Fatalf("%d deadlocks between StartMany and CompleteMany, want none", got)
	}
}

func errorsJoin(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// deadlocks returns how many deadlocks the database of dsn has seen. The statistics are
// flushed at the end of transactions, so a fresh connection's read sees those before it.
func deadlocks(ctx context.Context, t *testing.T, dsn string) int64 {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	// Statistics reach the shared counters within a second of the transactions that made them.
	if _, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT pg_stat_clear_snapshot(), deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(nil, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
