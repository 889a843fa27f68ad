package jobs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs"
	"scheduler/internal/schedule"
	"scheduler/internal/testenv"
)

// gaveUpLedger is the store, counting the raises that gave up waiting for a held fence.
type gaveUpLedger struct {
	*fence.Store
	gaveUp atomic.Int32
}

func (l *gaveUpLedger) RaiseAll(ctx context.Context, jobs []string, token int64) error {
	err := l.Store.RaiseAll(ctx, jobs, token)
	if errors.Is(err, scheduler.ErrFenceHeld) {
		l.gaveUp.Add(1)
	}
	return err
}

// ledgerOnly hides the store's HeldFences (jobs.HoldReader): the runner cannot tell which
// fences are held.
type ledgerOnly struct{ scheduler.Ledger }

// TestRunner_FenceHeldAtTakeover: a job role's transaction left open after fence_verify('x')
// holds x's fence when a new term takes over x and y. The term holds x back (blocked, held) and
// runs y after one raise that gave up waiting: the raise of both fences. Raising in parts until
// the held job is found, as the runner does when the store cannot say which fences are held,
// costs a second raise that gives up (the part holding x) before y runs. Counting the raises
// that gave up measures the delay without timing it.
func TestRunner_FenceHeldAtTakeover(t *testing.T) {
	const old, token = int64(10), int64(20)
	for _, tc := range []struct {
		name   string
		ledger func(*gaveUpLedger) scheduler.Ledger
		gaveUp int32
	}{
		{"HoldsBackTheHeldJobAfterOneRaiseTimeout", func(l *gaveUpLedger) scheduler.Ledger { return l }, 1},
		{"RaisesInPartsWhenTheStoreCannotTell", func(l *gaveUpLedger) scheduler.Ledger { return ledgerOnly{l} }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dsn := testenv.MustDatabase(t)
			store := fencetest.Open(t, fence.Config{DSN: dsn, RaiseTimeout: 300 * time.Millisecond})
			if err := store.RaiseAll(ctx, []string{"x", "y"}, old); err != nil {
				t.Fatal(err)
			}
			conn := testenv.Connect(ctx, t, dsn)
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background()) //nolint:errcheck // the hold lasts the test
			if _, err := tx.Exec(ctx, "SELECT scheduler.fence_verify('x', $1)", old); err != nil {
				t.Fatal(err)
			}

			counted := &gaveUpLedger{Store: store}
			led, gaveUp := tc.ledger(counted), &counted.gaveUp
			// x is yearly, so the term raises its fence again only after refusal.BlockedRetry, well after
			// the test: every raise that gave up before y ran was the takeover's.
			x, y := heldSpec(t, "x", "@yearly"), heldSpec(t, "y", "* * * * * *")
			ranY := make(chan int32, 1)
			r, err := jobs.New([]jobs.Spec{x, y}, jobs.Options{Node: "n1", Ledger: led, Logger: zaptest.NewLogger(t),
				Hooks: jobs.Hooks{Fired: func(job string, _ time.Duration) {
					if job == "y" {
						select {
						case ranY <- gaveUp.Load():
						default:
						}
					}
				}}})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			leadFor(t, r, token)
			var n int32
			select {
			case n = <-ranY:
			case <-ctx.Done():
				t.Fatalf("y never ran while x's fence was held (raises that gave up: %d)", gaveUp.Load())
			}
			t.Logf("y ran %s after the term began, after %d raises that gave up", time.Since(start).Round(time.Millisecond), n)
			if n != tc.gaveUp {
				t.Fatalf("raises that gave up before y ran=%d, want %d", n, tc.gaveUp)
			}
			b := r.Blocked()
			if len(b) != 1 || b[0].Job != "x" || !b[0].Held || b[0].Token != token {
				t.Fatalf("blocked=%+v, want x alone, held below token %d", b, token)
			}
		})
	}
}

// heldSpec is a job name that succeeds on schedule spec.
func heldSpec(t *testing.T, name, spec string) jobs.Spec {
	t.Helper()
	s, err := schedule.Parse(spec, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return jobs.Spec{Name: name, Schedule: s, Executor: &countingExec{}, Timeout: time.Minute, Overlap: jobs.OverlapSkip,
		Misfire: jobs.MisfireSkip, Catchup: time.Hour, Enabled: true}
}
