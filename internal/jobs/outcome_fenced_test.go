package jobs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/jobs/internal/outcomes"
	"scheduler/internal/testenv"
)

// TestRunner_OutcomeRefusedByOutsideFence: x's exec run is in flight when its fence is
// raised from outside (etcd confirms the term). The run's outcome write is refused, x is blocked;
// the owner resets the fence, x unblocks and runs on in the same term. The finished run must be
// recorded (or closed), not left `running` for the next leader to run again.
func TestRunner_OutcomeRefusedByOutsideFence(t *testing.T) {
	release := make(chan struct{})
	var execs atomic.Int32
	first := true
	x := execFunc(func(ctx context.Context, a scheduler.Attempt) (string, error) {
		execs.Add(1)
		if first {
			first = false
			<-release
		}
		return "ran", nil
	})
	h := newBlockHarness(t, t0.Add(30*time.Second), nil, queued(t, "x", x), queued(t, "y", execFunc(succeed)))
	h.lead(token)
	h.advance(time.Minute, 1)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "x started", func() bool { return execs.Load() == 1 })
	h.ledger.raise("x", outsideFence) // raised from outside while x's run is in flight
	close(release)                    // x's run finishes: its outcome write is refused
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "x blocked", func() bool { return len(h.runner.Blocked()) == 1 })
	h.running()
	h.ledger.reset("x")
	h.advance(time.Minute, 1)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "x unblocked", func() bool { return len(h.runner.Blocked()) == 0 })
	for range 3 {
		h.advance(time.Minute, 1)
	}
	h.waitRows("y", "y's runs", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) >= 3 })
	h.waitRows("x", "x runs again", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) >= 1 })
	time.Sleep(200 * time.Millisecond)
	h.running()
	rows := h.rows("x")
	if n := count(rows, scheduler.StatusRunning); n != 0 {
		t.Errorf("x has %d run(s) left `running` in a term that goes on, though the executor returned: the next leader takes it over and runs the finished slot again", n)
	}
	if err := h.stop(); err != nil {
		t.Fatalf("Lead=%v", err)
	}
	// The next term takes the run over as an orphan.
	before := execs.Load()
	h.lead(token + 1)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "slot 12:01 closed", func() bool { return count(h.rows("x")[:1], scheduler.StatusRunning) == 0 })
	time.Sleep(100 * time.Millisecond)
	if execs.Load() != before {
		t.Errorf("the finished slot 12:01 of exec job x ran again at the next takeover (executions %d -> %d)", before, execs.Load())
	}
	_ = h.stop()
}

// TestRunner_OutcomeBlipThenOutsideFence: the outcome write fails (store down) and is retried; while it
// waits, the job's fence is raised from outside (etcd confirms the term); the store comes back,
// the retry is refused, the owner resets the fence. The outcome is dropped (not kept): the slot
// stays `running` and the same process's next term runs it again.
func TestRunner_OutcomeBlipThenOutsideFence(t *testing.T) {
	bothWrites(t, func(t *testing.T, batched bool) {
		h := newOutcomeHarnessWith(t, batched, func(o *Options) {
			o.Confirm = func(context.Context, int64) error { return nil }
		})
		stop := h.leadStoreDown(token) // 12:01 ran; its outcome write waits in its backoff
		h.ledger.raise("job", outsideFence)
		h.ledger.down.Store(false)
		h.clock.Advance(outcomes.MaxRetryDelay)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "job blocked", func() bool { return len(h.runner.Blocked()) == 1 })
		h.ledger.reset("job")
		for i := 0; len(h.runner.Blocked()) != 0 && i < 100; i++ {
			h.clock.Advance(time.Minute)
			time.Sleep(10 * time.Millisecond)
		}
		if err := stop(); err != nil {
			t.Fatalf("Lead=%v", err)
		}
		rows := h.ledger.snapshot("job")
		execs := h.runs.Load()
		if rows[0].Status == scheduler.StatusRunning {
			t.Errorf("slot 12:01 left running after its executor returned in a term that went on")
		}
		h.lead(token + 1)
		rows = waitForRows(t, h.ledger.fakeLedger, func(r []ledgerRow) bool { return r[0].Status != scheduler.StatusRunning })
		if h.runs.Load() != execs {
			t.Errorf("the same process's next term ran slot 12:01 again (executions %d -> %d; row %+v): its outcome was not kept", execs, h.runs.Load(), rows[0].Run)
		}
	})
}
