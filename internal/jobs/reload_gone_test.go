package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/jobs/internal/attempts"
	"scheduler/internal/testenv"
)

// yearly is a job that does not come due during these tests, so that a table keeps a job.
func yearly(t *testing.T) Spec {
	return spec(t, "other", execFunc(succeed), func(s *Spec) { s.Schedule = mustSchedule(t, "0 0 1 1 *") })
}

// observed returns a logger to the test and what it logged.
func observed(t *testing.T) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.InfoLevel)
	return zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core)), logs
}

// settled waits until the run of job's slot at is no longer running, and returns it.
func settled(t *testing.T, led *fakeLedger, job string, at time.Time) ledgerRow {
	t.Helper()
	var row ledgerRow
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the slot settled", func() bool {
		for _, r := range led.snapshot(job) {
			if r.ScheduledAt.Equal(at) && r.Status != scheduler.StatusRunning {
				row = r
				return true
			}
		}
		return false
	})
	return row
}

// reloaded swaps table in and waits until the loop has applied it.
func reloaded(t *testing.T, r *Runner, logs *observer.ObservedLogs, table ...Spec) {
	t.Helper()
	n := logs.FilterMessage("table reloaded").Len()
	if err := r.SetTable(table); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "reloaded", func() bool { return logs.FilterMessage("table reloaded").Len() > n })
}

// TestRunner_ReloadRemovedSlotClaimInFlight: a job's slot fires while its claim ahead is still
// in flight, and a reload removes the job before the claim answers. The claimed run is closed
// skipped, saying the job was removed, and never started. Before, the claim's answer started it.
func TestRunner_ReloadRemovedSlotClaimInFlight(t *testing.T) {
	exec := &countingExec{}
	led := &slotClaims{fakeLedger: newFakeLedger(), n: map[time.Time]int{}, sent: make(chan struct{}), release: make(chan struct{})}
	led.hold.Store(true)
	clk := newFakeClock(t0.Add(30 * time.Second))
	lg, logs := observed(t)
	r := mustNew(t, []Spec{spec(t, "job", exec, nil), yearly(t)}, Options{Node: "n1", Ledger: led, Clock: clk, Logger: lg})
	leadAsync(t, r, token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() == 1 })
	clk.Advance(29*time.Second + 500*time.Millisecond)
	<-led.sent
	clk.Advance(time.Second) // the slot 12:01 fires; its claim has not answered
	reloaded(t, r, logs, yearly(t))
	close(led.release)
	row := settled(t, led.fakeLedger, "job", t0.Add(time.Minute))
	if row.Status != scheduler.StatusSkipped || row.Completion.Reason != reasonRemoved || exec.n.Load() != 0 {
		t.Fatalf("slot 12:01: %+v, %d runs; want skipped (%q), not run", row, exec.n.Load(), reasonRemoved)
	}
}

// TestRunner_ReloadRemovedSlotInBacklog: a slot's claim failed (the store is down) and the slot
// waits to be claimed again; a reload removes its job; the store comes back. The slot is recorded
// skipped, saying the job was removed, and not run. Before, it ran once the store was back.
func TestRunner_ReloadRemovedSlotInBacklog(t *testing.T) {
	exec := &countingExec{}
	led := &claimlessLedger{fakeLedger: newFakeLedger()}
	led.down.Store(true)
	clk := newFakeClock(t0.Add(30 * time.Second))
	lg, logs := observed(t)
	r := mustNew(t, []Spec{spec(t, "job", exec, nil), yearly(t)}, Options{Node: "n1", Ledger: led, Clock: clk, ClaimAhead: -1, Logger: lg})
	leadAsync(t, r, token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() == 1 })
	clk.Advance(30 * time.Second)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the claim failed", func() bool { return logs.FilterMessage("claim slots; retrying").Len() == 1 })
	reloaded(t, r, logs, yearly(t))
	led.down.Store(false)
	clk.Advance(2 * time.Second)
	row := settled(t, led.fakeLedger, "job", t0.Add(time.Minute))
	if row.Status != scheduler.StatusSkipped || row.Completion.Reason != reasonRemoved || exec.n.Load() != 0 {
		t.Fatalf("slot 12:01: %+v, %d runs; want skipped (%q), not run", row, exec.n.Load(), reasonRemoved)
	}
}

// TestRunner_ReloadClosesQueuedSlot: a slot claimed ahead fires while a manual run of its job
// runs, and waits behind it (overlap queue); a reload then removes or disables the job. The
// queued run is closed skipped, saying why, and never started; the manual run finishes. Before,
// the removed job's queued run stayed running in the ledger for good, and the disabled job's ran.
// (Should the reload come before the slot fires, its claim is closed the same way.)
func TestRunner_ReloadClosesQueuedSlot(t *testing.T) {
	for name, tc := range map[string]struct {
		table  func(job Spec) []Spec
		reason string
	}{
		"removed":  {func(Spec) []Spec { return []Spec{yearly(t)} }, reasonRemoved},
		"disabled": {func(job Spec) []Spec { job.Enabled = false; return []Spec{job, yearly(t)} }, reasonDisabled},
	} {
		t.Run(name, func(t *testing.T) {
			var scheduled atomic.Int32
			release := make(chan struct{})
			defer close(release)
			exec := execFunc(func(_ context.Context, a scheduler.Attempt) (string, error) {
				if a.Manual {
					<-release
				} else {
					scheduled.Add(1)
				}
				return "ran", nil
			})
			led, clk := newFakeLedger(), newFakeClock(t0.Add(30*time.Second))
			lg, logs := observed(t)
			job := spec(t, "job", exec, func(s *Spec) { s.Overlap = OverlapQueue })
			r := mustNew(t, []Spec{job, yearly(t)}, Options{Node: "n1", Ledger: led, Clock: clk, Logger: lg})
			leadAsync(t, r, token)
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() == 1 })
			clk.Advance(29*time.Second + 500*time.Millisecond)
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "claimed ahead", func() bool { return len(led.snapshot("job")) == 1 })
			if err := r.Trigger(context.Background(), "job", clk.Now()); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "the manual run", func() bool { return logs.FilterMessage("run started").Len() == 1 })
			clk.Advance(500 * time.Millisecond) // the slot 12:01 fires, and waits for the manual run
			time.Sleep(20 * time.Millisecond)   // the loop's turn
			reloaded(t, r, logs, tc.table(job)...)
			row := settled(t, led, "job", t0.Add(time.Minute))
			if row.Status != scheduler.StatusSkipped || row.Completion.Reason != tc.reason || scheduled.Load() != 0 {
				t.Fatalf("slot 12:01: %+v, %d scheduled runs; want skipped (%q), not run", row, scheduled.Load(), tc.reason)
			}
		})
	}
}

// TestRunner_ReloadRemovedJobRetriesNoMore: a reload removes a job whose run failed and waits
// to retry. The run ends failed at once, with its error and saying it was not retried, and no
// retry starts. Before, the removed job went on retrying for its whole budget.
func TestRunner_ReloadRemovedJobRetriesNoMore(t *testing.T) {
	var attempted atomic.Int32
	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) {
		attempted.Add(1)
		return "", errors.New("exit status 1")
	})
	led, clk := newFakeLedger(), newFakeClock(t0.Add(30*time.Second))
	lg, logs := observed(t)
	job := spec(t, "job", exec, func(s *Spec) { s.Retries, s.RetryBackoff = 5, time.Minute })
	r := mustNew(t, []Spec{job, yearly(t)}, Options{Node: "n1", Ledger: led, Clock: clk, Logger: lg})
	leadAsync(t, r, token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() == 1 })
	clk.Advance(30 * time.Second)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the first attempt failed", func() bool {
		return logs.FilterMessage("attempt failed; retrying").Len() == 1
	})
	reloaded(t, r, logs, yearly(t))
	row := settled(t, led, "job", t0.Add(time.Minute))
	if row.Status != scheduler.StatusFailed || row.Completion.Reason != attempts.ReasonNotRetried || row.Completion.Error != "exit status 1" || attempted.Load() != 1 {
		t.Fatalf("slot 12:01: %+v, %d attempts; want failed after 1 attempt, not retried", row, attempted.Load())
	}
}

// heldRaise is a fakeLedger whose raise of job's fence waits for release, or fails with err
// once when err is set.
type heldRaise struct {
	*fakeLedger
	job     string
	release chan struct{}
	err     atomic.Pointer[error]
}

func (l *heldRaise) RaiseAll(ctx context.Context, jobs []string, token int64) error {
	if contains(jobs, l.job) {
		if err := l.err.Swap(nil); err != nil {
			return *err
		}
		select {
		case <-l.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return l.fakeLedger.RaiseAll(ctx, jobs, token)
}

// TestRunner_ReloadAddedJobRaise: a reload adds a job while its fence cannot be raised yet.
//   - held: the raise waits (a session holds the fence's lock, or the store is slow). The other
//     jobs' slots fire on time meanwhile, and the new job runs once the raise answers. Before,
//     the raise ran on the loop and every job waited for it.
//   - failed: the raise fails (a store blip). It is tried again, and the new job runs. Before,
//     the job was left out of the term for good, though the table listed it.
func TestRunner_ReloadAddedJobRaise(t *testing.T) {
	for _, mode := range []string{"held", "failed"} {
		t.Run(mode, func(t *testing.T) {
			tick, added := &countingExec{}, &countingExec{}
			led := &heldRaise{fakeLedger: newFakeLedger(), job: "new", release: make(chan struct{})}
			if mode == "failed" {
				close(led.release)
				led.err.Store(&errStoreDown)
			}
			clk := newFakeClock(t0.Add(30 * time.Second))
			lg, logs := observed(t)
			ticker := spec(t, "tick", tick, nil)
			r := mustNew(t, []Spec{ticker}, Options{Node: "n1", Ledger: led, Clock: clk, Logger: lg})
			leadAsync(t, r, token)
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() == 1 })
			reloaded(t, r, logs, ticker, spec(t, "new", added, nil))
			if err := r.Trigger(context.Background(), "new", clk.Now()); mode == "held" && (err == nil || errors.Is(err, ErrUnknownJob)) {
				t.Fatalf("trigger of the job whose fence is being raised: %v, want refused for now (kept, not dropped)", err)
			}
			for i := 1; i <= 3; i++ { // 12:01 to 12:03: tick's slots, whatever the new job's raise does
				testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() >= 1 })
				clk.Advance(t0.Add(time.Duration(i) * time.Minute).Sub(clk.Now()))
				testenv.Eventually(t, 10*time.Second, time.Millisecond, "tick's slot", func() bool { return tick.n.Load() == int32(i) })
			}
			if mode == "held" {
				if n := added.n.Load(); n != 0 {
					t.Fatalf("the new job ran %d times before its fence was raised", n)
				}
				close(led.release)
			}
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "the new job's fence raised", func() bool {
				return logs.FilterMessage("fence raised to the token; the job runs").Len() == 1
			})
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() >= 1 })
			clk.Advance(time.Minute)
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "the new job's slot", func() bool { return added.n.Load() >= 1 })
		})
	}
}

// TestRunner_ReloadAddedJobRefused: a reload adds a job whose fence is above the term's token
// (a newer leader raised it). The refusal is settled as any other: etcd is asked whether the
// term holds, and since it does not, the term ends. Before, the job was blocked without asking,
// and reported as raised by someone outside the scheduler, with a reset of the fence as remedy.
func TestRunner_ReloadAddedJobRefused(t *testing.T) {
	var confirms atomic.Int32
	led, clk := newFakeLedger(), newFakeClock(t0.Add(30*time.Second))
	led.fences["new"] = 99 // a newer leader's token
	lg, logs := observed(t)
	r := mustNew(t, []Spec{yearly(t)}, Options{Node: "n1", Ledger: led, Clock: clk, Logger: lg,
		Confirm: func(context.Context, int64) error { confirms.Add(1); return errors.New("the term is over") }})
	l := leadAsync(t, r, token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() >= 1 })
	reloaded(t, r, logs, yearly(t), spec(t, "new", &countingExec{}, nil))
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the term's end", func() bool { over, _ := l.returned(); return over })
	if _, err := l.returned(); !errors.Is(err, scheduler.ErrFenced) || confirms.Load() == 0 || len(r.Blocked()) != 0 {
		t.Fatalf("Lead=%v after %d confirmations, blocked %v; want the term ended fenced, etcd asked, nothing blocked", err, confirms.Load(), r.Blocked())
	}
}

// TestRunner_ReloadReaddedWhileRaising: a job a reload added is removed and added again while
// the raise of its fence is still held. It stays held back: a trigger of it is refused for now,
// and it runs once the raise answers. Before, it was taken for a known job and ran at once.
func TestRunner_ReloadReaddedWhileRaising(t *testing.T) {
	added := &countingExec{}
	led := &heldRaise{fakeLedger: newFakeLedger(), job: "new", release: make(chan struct{})}
	clk := newFakeClock(t0.Add(30 * time.Second))
	lg, logs := observed(t)
	r := mustNew(t, []Spec{yearly(t)}, Options{Node: "n1", Ledger: led, Clock: clk, Logger: lg})
	leadAsync(t, r, token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() >= 1 })
	newJob := spec(t, "new", added, nil)
	reloaded(t, r, logs, yearly(t), newJob) // its raise held
	reloaded(t, r, logs, yearly(t))         // removed
	reloaded(t, r, logs, yearly(t), newJob) // back, the raise still held
	if err := r.Trigger(context.Background(), "new", clk.Now()); err == nil || errors.Is(err, ErrUnknownJob) {
		t.Fatalf("trigger while the fence's raise is held: %v, want refused for now", err)
	}
	close(led.release)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the new job's fence raised", func() bool {
		return logs.FilterMessage("fence raised to the token; the job runs").Len() >= 1
	})
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() >= 1 })
	clk.Advance(time.Minute)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the new job's slot", func() bool { return added.n.Load() >= 1 })
}

// TestRunner_ReloadDisabledKeepsManualRetries: a reload disables a job while a manual run of it
// waits to retry. Someone asked for that run: it retries and succeeds, as a disabled job's
// manual runs do.
func TestRunner_ReloadDisabledKeepsManualRetries(t *testing.T) {
	var attempted atomic.Int32
	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) {
		if attempted.Add(1) == 1 {
			return "", errors.New("exit status 1")
		}
		return "ok", nil
	})
	led, clk := newFakeLedger(), newFakeClock(t0.Add(30*time.Second))
	lg, logs := observed(t)
	job := spec(t, "job", exec, func(s *Spec) { s.Retries, s.RetryBackoff = 1, time.Minute })
	r := mustNew(t, []Spec{job, yearly(t)}, Options{Node: "n1", Ledger: led, Clock: clk, Logger: lg})
	leadAsync(t, r, token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() == 1 })
	at := clk.Now()
	if err := r.Trigger(context.Background(), "job", at); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the first attempt failed", func() bool {
		return logs.FilterMessage("attempt failed; retrying").Len() == 1
	})
	job.Enabled = false
	reloaded(t, r, logs, job, yearly(t))
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the wait before the retry", func() bool { return clk.Pending() >= 1 })
	clk.Advance(time.Minute)
	row := settled(t, led, "job", at.UTC().Truncate(time.Microsecond))
	if row.Status != scheduler.StatusSucceeded || attempted.Load() != 2 {
		t.Fatalf("manual run %+v after %d attempts; want succeeded at its retry", row, attempted.Load())
	}
}
