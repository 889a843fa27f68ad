package adapt

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler/internal/fence"
	"scheduler/internal/jobs"
)

// flakyLedger is the store's Ledger whose outcome writes fail while failing is positive, each
// failure counting it down: the store unreachable for a while.
type flakyLedger struct {
	Ledger
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

func (l *flakyLedger) Complete(ctx context.Context, token int64, c jobs.Completion) error {
	if l.fail() {
		return errUnreachable
	}
	return l.Ledger.Complete(ctx, token, c)
}

func (l *flakyLedger) CompleteMany(ctx context.Context, token int64, cs []jobs.Completion) ([]bool, error) {
	if l.fail() {
		return nil, errUnreachable
	}
	return l.Ledger.CompleteMany(ctx, token, cs)
}

type countingExec struct{ n atomic.Int32 }

func (e *countingExec) Execute(context.Context, jobs.Run) (string, error) {
	e.n.Add(1)
	return "ran", nil
}

func testSpec(t *testing.T, exec jobs.Executor, schedule string) jobs.Spec {
	t.Helper()
	s, err := jobs.ParseSchedule(schedule, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return jobs.Spec{Name: "job", Schedule: s, Executor: exec, Timeout: time.Minute, Overlap: jobs.OverlapSkip,
		Misfire: jobs.MisfireSkip, Catchup: time.Hour, Enabled: true}
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
func waitRun(ctx context.Context, t *testing.T, store *fence.Store, slot time.Time) fence.Run {
	t.Helper()
	for {
		runs, err := store.History(ctx, "job", 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.ScheduledAt.Equal(slot) && r.Status != fence.StatusRunning {
				return r
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("slot %s: no finished run (%+v)", slot, runs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestRunner_OutcomeWriteRetriedOnStore: a manual run whose outcome write fails three times is
// executed once and recorded succeeded, attempt 1, in the real store.
func TestRunner_OutcomeWriteRetriedOnStore(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			store := open(t)
			led := &flakyLedger{Ledger: Ledger{Store: store}}
			led.failing.Store(3)
			exec := &countingExec{}
			r, err := jobs.New([]jobs.Spec{testSpec(t, exec, "@yearly")}, jobs.Options{Node: "n1", Ledger: led, Logger: zaptest.NewLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			leadFor(t, r, 10)
			at := time.Now().UTC().Truncate(time.Second)
			for {
				err := r.Trigger(ctx, "job", at)
				if err == nil {
					break
				}
				if !errors.Is(err, jobs.ErrNotLeading) || ctx.Err() != nil {
					t.Fatal(err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			run := waitRun(ctx, t, store, at)
			if run.Status != fence.StatusSucceeded || run.Attempt != 1 || run.Output != "ran" || exec.n.Load() != 1 {
				t.Fatalf("run=%+v executions=%d, want succeeded, attempt 1, executed once", run, exec.n.Load())
			}
			if n := led.failing.Load(); n != 0 {
				t.Fatalf("%d failures left: the outcome was written before they were used", n)
			}
		})
	}
}

// TestRunner_SlotClaimedAheadTakenOverOnStore: a slot an older leader claimed ahead in the real
// store and never started is run by the next leader as attempt 1.
func TestRunner_SlotClaimedAheadTakenOverOnStore(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			store := open(t)
			spec := testSpec(t, nil, "@every 3s")
			// The older leader (token 5) claims the slot ahead, then stops before it fires.
			slot := spec.Schedule.Next(time.Now().Add(time.Second)).At
			res, err := store.ClaimAheadMany(ctx, 5, "old", []fence.Slot{{Job: "job", At: slot}})
			if err != nil || !res[0].Written || res[0].Run.Attempt != 0 {
				t.Fatalf("claim ahead = %+v (err %v)", res, err)
			}
			exec := &countingExec{}
			spec.Executor = exec
			r, err := jobs.New([]jobs.Spec{spec}, jobs.Options{Node: "n2", Ledger: Ledger{Store: store}, Logger: zaptest.NewLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			leadFor(t, r, 6)
			run := waitRun(ctx, t, store, slot)
			if run.Status != fence.StatusSucceeded || run.Attempt != 1 || run.Token != 6 || run.RunID != res[0].Run.RunID {
				t.Fatalf("run=%+v, want run %d succeeded under token 6, attempt 1", run, res[0].Run.RunID)
			}
		})
	}
}
