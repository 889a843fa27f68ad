package jobs_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs"
	"scheduler/internal/testenv"
)

// waitedLedger is the store, counting the runner's writes of slots and runs (not the raises of
// fences) that gave up waiting for a fence another session holds.
type waitedLedger struct {
	*fence.Store
	gaveUp atomic.Int32
	logf   func(format string, args ...any)
}

func (l *waitedLedger) count(what string, err error) error {
	if errors.Is(err, scheduler.ErrFenceHeld) {
		l.logf("%s gave up waiting for a held fence: %v", what, err)
		l.gaveUp.Add(1)
	}
	return err
}

func (l *waitedLedger) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	res, err := l.Store.ClaimMany(ctx, token, node, slots)
	return res, l.count("ClaimMany", err)
}

func (l *waitedLedger) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	res, err := l.Store.ClaimAheadMany(ctx, token, node, slots)
	return res, l.count("ClaimAheadMany", err)
}

func (l *waitedLedger) RecordMany(ctx context.Context, token int64, node string, outs []scheduler.Outcome) ([]scheduler.Result, error) {
	res, err := l.Store.RecordMany(ctx, token, node, outs)
	return res, l.count("RecordMany", err)
}

func (l *waitedLedger) Complete(ctx context.Context, token int64, c scheduler.Completion) (scheduler.Run, error) {
	run, err := l.Store.Complete(ctx, token, c)
	return run, l.count("Complete", err)
}

func (l *waitedLedger) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	res, err := l.Store.CompleteMany(ctx, token, cs)
	return res, l.count("CompleteMany", err)
}

// gatedExec succeeds at once, but for its first run after arm, which returns once release is
// closed.
type gatedExec struct {
	armed   atomic.Bool
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (e *gatedExec) Execute(ctx context.Context, _ scheduler.Attempt) (string, error) {
	if e.armed.CompareAndSwap(true, false) {
		e.once.Do(func() { close(e.entered) })
		select {
		case <-e.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "ran", nil
}

// TestRunner_FenceLockedMidTerm: a session outside the scheduler takes x's fence lock
// exclusively (the advisory lock functions are PUBLIC) while a run of x is executing, in the
// middle of a term. The writes of x then wait for the lock, up to the store's lock timeout, and
// give up: x is held back, and the writes that gave up are not retried while it is, neither
// its run's outcome nor the close of the slot it skipped, nor do the other jobs' writes wait
// with them: y, due every second like x, runs on. Counting the writes that gave up measures
// the delay without timing it. Once the lock is let go, x runs again, its run's outcome is
// recorded and no run of x is left running.
func TestRunner_FenceLockedMidTerm(t *testing.T) {
	const token = int64(10)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testenv.MustDatabase(t)
	store := fencetest.Open(t, fence.Config{DSN: dsn, RaiseTimeout: 300 * time.Millisecond})
	led := &waitedLedger{Store: store, logf: t.Logf}

	xExec := &gatedExec{entered: make(chan struct{}), release: make(chan struct{})}
	x, y := heldSpec(t, "x", "* * * * * *"), heldSpec(t, "y", "* * * * * *")
	x.Executor = xExec
	r, err := jobs.New([]jobs.Spec{x, y}, jobs.Options{Node: "n1", Ledger: led, Logger: zaptest.NewLogger(t),
		Confirm: func(context.Context, int64) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	leadFor(t, r, token)
	succeeded := func(job string, after time.Time) int {
		runs, err := store.History(ctx, job, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, run := range runs {
			if run.Status == scheduler.StatusSucceeded && run.Token == token && run.ScheduledAt.After(after) {
				n++
			}
		}
		return n
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: timed out (writes that gave up: %d, blocked: %+v)", what, led.gaveUp.Load(), r.Blocked())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitUntil("x and y running", func() bool { return succeeded("x", time.Time{}) >= 1 && succeeded("y", time.Time{}) >= 1 })

	xExec.armed.Store(true)
	<-xExec.entered
	conn := testenv.Connect(ctx, t, dsn)
	const lock = `SELECT pg_advisory_lock(hashtextextended('scheduler.job_fence:x', 0))`
	if _, err := conn.Exec(ctx, lock); err != nil {
		t.Fatal(err)
	}
	locked := time.Now()
	close(xExec.release) // x's run returns: its outcome's write waits for the lock

	waitUntil("x held back", func() bool {
		b := r.Blocked()
		return len(b) == 1 && b[0].Job == "x" && b[0].Held
	})
	atBlock := led.gaveUp.Load()
	waitUntil("y running on while x's fence is locked", func() bool { return succeeded("y", locked) >= 8 })
	// A write of x in flight when x was held back may still give up once after; nothing more
	// of x is written while it is held back.
	if n := led.gaveUp.Load(); n > atBlock+2 {
		t.Fatalf("%d writes gave up waiting for x's fence after x was held back (%d before), want at most 2: x's writes were retried while it was held back", n-atBlock, atBlock)
	}
	t.Logf("writes that gave up: %d before x was held back, %d in all", atBlock, led.gaveUp.Load())

	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended('scheduler.job_fence:x', 0))`); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	waitUntil("x running again", func() bool { return succeeded("x", freed) >= 2 && len(r.Blocked()) == 0 })
	// Nothing of x is lost: the run that was executing when the lock was taken is recorded, and
	// no slot of x before the lock was let go is left running (a skipped slot's run is closed).
	waitUntil("x's runs settled", func() bool {
		runs, err := store.History(ctx, "x", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range runs {
			if run.Status == scheduler.StatusRunning && run.ScheduledAt.Before(freed) {
				return false
			}
		}
		return succeeded("x", locked.Add(-2*time.Second)) >= 3
	})
}
