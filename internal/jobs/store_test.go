// The runner against the real store, Postgres and SQLite: the store is the runner's Ledger as
// it is, and the kinds' fenced writes go through the Attempt the runner binds to it.
package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs"
	"scheduler/internal/schedule"
)

// flakyLedger is the store's Ledger whose outcome writes fail while failing is positive, each
// failure counting it down: the store unreachable for a while.
type flakyLedger struct {
	*fence.Store
	failing atomic.Int32
}

var errUnreachable = errors.New("dial tcp: connect: connection refused")

func (l *flakyLedger) fail() bool {
	for {
		n := l.failing.Load()
		if n <= 0 {
			return false
		}
		if l.failing.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

func (l *flakyLedger) Complete(ctx context.Context, token int64, c scheduler.Completion) (scheduler.Run, error) {
	if l.fail() {
		return scheduler.Run{}, errUnreachable
	}
	return l.Store.Complete(ctx, token, c)
}

func (l *flakyLedger) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	if l.fail() {
		return nil, errUnreachable
	}
	return l.Store.CompleteMany(ctx, token, cs)
}

type countingExec struct{ n atomic.Int32 }

func (e *countingExec) Execute(context.Context, scheduler.Attempt) (string, error) {
	e.n.Add(1)
	return "ran", nil
}

func testSpec(t *testing.T, exec scheduler.Executor, spec string) jobs.Spec {
	t.Helper()
	s, err := schedule.Parse(spec, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return jobs.Spec{Name: "job", Schedule: s, Executor: exec, Timeout: time.Minute, Overlap: jobs.OverlapSkip,
		Misfire: jobs.MisfireSkip, Catchup: time.Hour, Enabled: true}
}

// newRunner returns a runner of spec alone on node over led, logging to the test.
func newRunner(t *testing.T, spec jobs.Spec, node string, led scheduler.Ledger) *jobs.Runner {
	t.Helper()
	r, err := jobs.New([]jobs.Spec{spec}, jobs.Options{Node: node, Ledger: led, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// leadFor starts r's term with token and ends it at the end of the test.
func leadFor(t *testing.T, r *jobs.Runner, token int64) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Lead(ctx, token) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Lead=%v", err)
		}
	})
}

// waitRun waits until the job's run of slot is finished in the store, and returns it.
func waitRun(ctx context.Context, t *testing.T, store *fence.Store, slot time.Time) scheduler.Run {
	t.Helper()
	return awaitRun(ctx, t, store, fmt.Sprintf("slot %s: no finished run", slot), func(r scheduler.Run) bool {
		return r.ScheduledAt.Equal(slot) && r.Status != scheduler.StatusRunning
	})
}

// awaitRun waits until one of the job's latest runs in the store matches, and returns it; the
// test fails with what if ctx ends first.
func awaitRun(ctx context.Context, t *testing.T, store *fence.Store, what string, match func(scheduler.Run) bool) scheduler.Run {
	t.Helper()
	for {
		runs, err := store.History(ctx, "job", 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if match(r) {
				return r
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s (%+v)", what, runs)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestRunner_OutcomeWriteRetriedOnStore: a manual run whose outcome write fails three times is
// executed once and recorded succeeded, attempt 1, in the real store.
func TestRunner_OutcomeWriteRetriedOnStore(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		led := &flakyLedger{Store: store}
		led.failing.Store(3)
		exec := &countingExec{}
		r := newRunner(t, testSpec(t, exec, "@yearly"), "n1", led)
		leadFor(t, r, 10)
		at := time.Now().UTC().Truncate(time.Second)
		trigger(ctx, t, r, at)
		run := waitRun(ctx, t, store, at)
		if run.Status != scheduler.StatusSucceeded || run.Attempt != 1 || run.Output != "ran" || exec.n.Load() != 1 {
			t.Fatalf("run=%+v executions=%d, want succeeded, attempt 1, executed once", run, exec.n.Load())
		}
		if n := led.failing.Load(); n != 0 {
			t.Fatalf("%d failures left: the outcome was written before they were used", n)
		}
	})
}

// TestRunner_SlotClaimedAheadTakenOverOnStore: a slot an older leader claimed ahead in the real
// store and never started is run by the next leader as attempt 1.
func TestRunner_SlotClaimedAheadTakenOverOnStore(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		spec := testSpec(t, nil, "@every 3s")
		// The older leader (token 5) claims the slot ahead, then stops before it fires.
		slot := spec.Schedule.Next(time.Now().Add(time.Second)).At
		res, err := store.ClaimAheadMany(ctx, 5, "old", []scheduler.SlotKey{{Job: "job", At: slot}})
		if err != nil || !res[0].Written || res[0].Run.Attempt != 0 {
			t.Fatalf("claim ahead = %+v (err %v)", res, err)
		}
		exec := &countingExec{}
		spec.Executor = exec
		r := newRunner(t, spec, "n2", store)
		leadFor(t, r, 6)
		run := waitRun(ctx, t, store, slot)
		if run.Status != scheduler.StatusSucceeded || run.Attempt != 1 || run.Token != 6 || run.RunID != res[0].Run.RunID {
			t.Fatalf("run=%+v, want run %d succeeded under token 6, attempt 1", run, res[0].Run.RunID)
		}
	})
}

// probeExec writes one row per attempt into stock_scans through the attempt's fenced
// transaction: sku names the run and the token it ran under. While hold is set an attempt
// first says so on entered and waits for release.
type probeExec struct {
	hold     atomic.Bool
	entered  chan struct{}
	release  chan struct{}
	mu       sync.Mutex
	refusals []error // the errors of fenced writes
}

func (e *probeExec) Execute(ctx context.Context, a scheduler.Attempt) (string, error) {
	if e.hold.Load() {
		e.entered <- struct{}{}
		<-e.release
	}
	err := a.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO stock_scans (sku, quantity) VALUES ($1, $2)`,
			fmt.Sprintf("run-%s-token-%d", a.RunID, a.Token), a.Attempt)
		return err
	})
	if err != nil {
		e.mu.Lock()
		e.refusals = append(e.refusals, err)
		e.mu.Unlock()
		return "", fmt.Errorf("write scan: %w", err)
	}
	return "scan written", nil
}

// trigger starts a manual run of job at at, waiting for r to lead.
func trigger(ctx context.Context, t *testing.T, r *jobs.Runner, at time.Time) {
	t.Helper()
	for {
		err := r.Trigger(ctx, "job", at)
		if err == nil {
			return
		}
		if !errors.Is(err, jobs.ErrNotLeading) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunner_FencedWriteOnStore drives the real store through a slot's life: a claim, a run whose
// write goes through the attempt's fenced transaction, its completion; then a run of a term
// that a newer leader's raise made stale, whose write the store refuses (the term ends, nothing
// of it lands), and the newer leader's takeover, which runs the slot again under its own token.
func TestRunner_FencedWriteOnStore(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		exec := &probeExec{entered: make(chan struct{}), release: make(chan struct{})}
		old := newRunner(t, testSpec(t, exec, "@yearly"), "old", store)
		lctx, stop := context.WithCancel(ctx)
		defer stop()
		lead := make(chan error, 1)
		go func() { lead <- old.Lead(lctx, 10) }()

		// Claim, run, fenced write, complete.
		first := time.Now().UTC().Truncate(time.Second)
		trigger(ctx, t, old, first)
		run := waitRun(ctx, t, store, first)
		if run.Status != scheduler.StatusSucceeded || run.Token != 10 || run.Attempt != 1 || run.Output != "scan written" {
			t.Fatalf("first run=%+v, want succeeded under token 10, attempt 1, its output stored", run)
		}
		firstID := run.RunID
		if got, want := fencetest.StockScans(ctx, t, store), []string{fmt.Sprintf("run-%d-token-10", firstID)}; !slices.Equal(got, want) {
			t.Fatalf("scans=%v, want %v: the run's fenced write", got, want)
		}

		// A newer leader raises the job's fence while the old term's next run is running.
		exec.hold.Store(true)
		second := first.Add(time.Second)
		trigger(ctx, t, old, second)
		<-exec.entered
		if err := store.RaiseAll(ctx, []string{"job"}, 20); err != nil {
			t.Fatal(err)
		}
		exec.hold.Store(false)
		exec.release <- struct{}{}
		select {
		case err := <-lead:
			if !errors.Is(err, scheduler.ErrFenced) {
				t.Fatalf("old Lead=%v, want the term ended by the store's refusal (ErrFenced)", err)
			}
		case <-ctx.Done():
			t.Fatal("the old term went on after the store refused its write")
		}
		exec.mu.Lock()
		refusals := slices.Clone(exec.refusals)
		exec.mu.Unlock()
		var fe *scheduler.FenceError
		if len(refusals) != 1 || !errors.As(refusals[0], &fe) || fe.Job != "job" || fe.Token != 10 || fe.Fence != 20 || !errors.Is(refusals[0], fence.ErrStale) {
			t.Fatalf("refusals=%v, want one *scheduler.FenceError for job, token 10, fence 20, wrapping fence.ErrStale", refusals)
		}
		if got := fencetest.StockScans(ctx, t, store); len(got) != 1 {
			t.Fatalf("scans=%v, want only the first run's: the stale write must not land", got)
		}

		// The newer leader takes the run over and runs it again under its own token.
		newer := newRunner(t, testSpec(t, exec, "@yearly"), "new", store)
		leadFor(t, newer, 20)
		run = waitRun(ctx, t, store, second)
		if run.Status != scheduler.StatusSucceeded || run.Token != 20 || run.Attempt != 2 || run.Node != "new" {
			t.Fatalf("second run=%+v, want taken over and succeeded under token 20, attempt 2, on new", run)
		}
		want := []string{fmt.Sprintf("run-%d-token-10", firstID), fmt.Sprintf("run-%d-token-20", run.RunID)}
		if got := fencetest.StockScans(ctx, t, store); !slices.Equal(got, want) {
			t.Fatalf("scans=%v, want %v", got, want)
		}
	})
}
