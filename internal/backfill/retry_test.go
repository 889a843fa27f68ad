package backfill_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/backfill"
)

// flakyWorld is a runner and a ledger whose calls fail while failures lasts, each failure
// counting it down; a slot the runner accepts succeeds at once.
type flakyWorld struct {
	mu       sync.Mutex
	failures map[string]int // by method
	runs     map[time.Time]scheduler.Run
	asked    []time.Time
}

var errDown = errors.New("connection refused")

func (w *flakyWorld) fail(method string) bool {
	if w.failures[method] > 0 {
		w.failures[method]--
		return true
	}
	return false
}

func (w *flakyWorld) Backfill(_ context.Context, s scheduler.SlotKey) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail("Backfill") {
		return errDown
	}
	w.asked = append(w.asked, s.At)
	w.runs[s.At] = scheduler.Run{Job: s.Job, ScheduledAt: s.At, Status: scheduler.StatusSucceeded, BackfillID: s.Backfill, Backfill: true}
	return nil
}

func (w *flakyWorld) BackfillRuns(context.Context, string, int64) ([]scheduler.Run, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail("BackfillRuns") {
		return nil, errDown
	}
	return nil, nil
}

func (w *flakyWorld) SlotRuns(_ context.Context, _ string, from, _ time.Time) ([]scheduler.Run, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail("SlotRuns") {
		return nil, errDown
	}
	if r, ok := w.runs[from]; ok {
		return []scheduler.Run{r}, nil
	}
	return nil, nil
}

func (w *flakyWorld) Running(context.Context, string) ([]scheduler.Run, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail("Running") {
		return nil, errDown
	}
	return nil, nil
}

// now is an After that answers at once: the retries' waits take no time.
func now(time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	c <- time.Time{}
	return c
}

// TestRun_RetriesFailures: a runner that refuses a slot and a ledger that fails its reads for a
// while delay the slots but lose none, and none runs twice; a first read that fails ends Run
// with its error, for the next term; the end of ctx ends Run with ctx's error; a job gone from
// the table ends it with ErrBadRequest.
func TestRun_RetriesFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &flakyWorld{failures: map[string]int{"Backfill": 2, "SlotRuns": 2, "Running": 2}, runs: map[time.Time]scheduler.Run{}}
	cfg := backfill.Config{Runner: w, Ledger: w, Logger: zaptest.NewLogger(t), After: now}
	req := backfill.Request{Job: "job", ID: 9, Slots: hours(0, 3), Overlap: backfill.OverlapQueue}
	p, err := backfill.Run(ctx, cfg, req, nil)
	if err != nil || p != (backfill.Progress{Total: 4, Done: 4, Succeeded: 4}) {
		t.Fatalf("backfill = %+v (err %v), want 4 succeeded", p, err)
	}
	if len(w.asked) != 4 {
		t.Fatalf("slots asked for %v, want each once", w.asked)
	}

	w.failures["BackfillRuns"] = 1
	if _, err := backfill.Run(ctx, cfg, req, nil); !errors.Is(err, errDown) {
		t.Fatalf("a failed first read: err %v, want it returned", err)
	}

	w.failures["Running"] = 1 << 30
	stopped, stop := context.WithCancel(ctx)
	stop()
	if _, err := backfill.Run(stopped, cfg, backfill.Request{Job: "job", ID: 10, Slots: hours(4, 5), Overlap: backfill.OverlapSkip}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run on an ended context: err %v, want context.Canceled", err)
	}

	// A job that left the table: the refused slot ends the request, not asked for again.
	w.failures["Running"], w.failures["Backfill"] = 0, 1<<30
	gone := errors.New("no such job in the leader's table")
	cfg.Still = func() error { return gone }
	if _, err := backfill.Run(ctx, cfg, backfill.Request{Job: "job", ID: 11, Slots: hours(6, 7), Overlap: backfill.OverlapQueue}, nil); !errors.Is(err, backfill.ErrBadRequest) || !errors.Is(err, gone) {
		t.Fatalf("a job gone from the table: err %v, want ErrBadRequest saying why", err)
	}
}
