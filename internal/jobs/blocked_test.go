package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/testenv"
)

// outsideFence is a fence raised from outside the scheduler, far above any token of the tests.
const outsideFence = int64(9000000000000)

// blockHarness is a harness whose runner asks confirm whether the term holds, and records the
// Blocked hook's calls.
type blockHarness struct {
	*harness
	confirms atomic.Int32
	mu       sync.Mutex
	hooked   []string // "job=true" / "job=false", in order
}

func newBlockHarness(t *testing.T, now time.Time, confirm error, table ...Spec) *blockHarness {
	t.Helper()
	return newBlockHarnessWith(t, now, confirm, nil, table...)
}

// newBlockHarnessWith is newBlockHarness with options changed by mod.
func newBlockHarnessWith(t *testing.T, now time.Time, confirm error, mod func(*Options), table ...Spec) *blockHarness {
	t.Helper()
	bh := &blockHarness{harness: &harness{t: t, clock: newFakeClock(now), ledger: newFakeLedger()}}
	opts := Options{Node: "n1", Ledger: bh.ledger, Clock: bh.clock, Logger: zaptest.NewLogger(t),
		Confirm: func(ctx context.Context, tok int64) error {
			bh.confirms.Add(1)
			if tok != token {
				return fmt.Errorf("confirm token %d, want %d", tok, token)
			}
			return confirm
		},
		Hooks: Hooks{Blocked: func(job string, on bool) {
			bh.mu.Lock()
			defer bh.mu.Unlock()
			bh.hooked = append(bh.hooked, fmt.Sprintf("%s=%v", job, on))
		}},
	}
	if mod != nil {
		mod(&opts)
	}
	r := mustNew(t, table, opts)
	bh.runner = r
	return bh
}

func (bh *blockHarness) hooks() string {
	bh.mu.Lock()
	defer bh.mu.Unlock()
	return strings.Join(bh.hooked, ",")
}

// running reports that Lead has not returned.
func (bh *blockHarness) running() {
	bh.t.Helper()
	if over, err := bh.term.returned(); over {
		bh.t.Fatalf("Lead returned %v: a fence above a confirmed term's token must block one job, not end the term", err)
	}
}

// queued returns a job that runs every minute with exec, a slot due while its previous run is
// still in flight queued behind it: the tests wait for a run's ledger row, and the runner learns
// of the run's end a moment after writing it, so a slot fired in between would be skipped.
func queued(tb testing.TB, name string, exec scheduler.Executor) Spec {
	return spec(tb, name, exec, func(s *Spec) { s.Overlap = OverlapQueue })
}

func blockedJobs(r *Runner) []string {
	var out []string
	for _, b := range r.Blocked() {
		out = append(out, b.Job)
	}
	return out
}

func TestRunner_FenceAboveConfirmedToken(t *testing.T) {
	t.Run("BlocksOnlyThatJobAndUnblocksAfterReset", func(t *testing.T) {
		h := newBlockHarness(t, t0.Add(30*time.Second), nil,
			queued(t, "x", execFunc(succeed)), queued(t, "y", execFunc(succeed)))
		h.lead(token)
		h.advance(time.Minute, 1)
		h.waitRows("x", "x's first run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
		h.waitRows("y", "y's first run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })

		h.ledger.raise("x", outsideFence) // a job role calling the raising fence function
		h.advance(time.Minute, 1)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "x blocked", func() bool { return len(h.runner.Blocked()) == 1 })
		h.waitRows("y", "y's second run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 2 })
		h.running()
		b := h.runner.Blocked()[0]
		if b.Job != "x" || b.Token != token || b.Fence != outsideFence {
			t.Fatalf("blocked=%+v, want x with token %d and fence %d", b, token, outsideFence)
		}
		for _, want := range []string{"--bump-revision", "fence_admin_reset('x')", "revoke"} {
			if !strings.Contains(b.Reason, want) {
				t.Fatalf("reason %q does not mention %q", b.Reason, want)
			}
		}
		if got := h.hooks(); got != "x=true" {
			t.Fatalf("Blocked hook calls %q, want x=true", got)
		}

		// Still blocked at its next slot: nothing recorded for x, y goes on with the same token.
		h.advance(time.Minute, 1)
		h.waitRows("y", "y's third run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 3 })
		h.running()
		if rows := h.rows("x"); len(rows) != 1 {
			t.Fatalf("x rows=%+v: a blocked job's slots must not be recorded", rows)
		}
		for _, r := range h.rows("y") {
			if r.Token != token {
				t.Fatalf("y run %+v has token %d, want %d: the term must not change", r, r.Token, token)
			}
		}

		h.ledger.reset("x") // the table owner's fence_admin_reset('x')
		h.advance(time.Minute, 1)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "x unblocked", func() bool { return len(h.runner.Blocked()) == 0 })
		h.advance(time.Minute, 1)
		h.waitRows("x", "x runs again", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 2 })
		if got := h.hooks(); got != "x=true,x=false" {
			t.Fatalf("Blocked hook calls %q, want x=true,x=false", got)
		}
		h.running()
		if err := h.stop(); err != nil {
			t.Fatalf("Lead=%v, want nil", err)
		}
	})

	t.Run("StepsDownWhenEtcdDoesNotConfirm", func(t *testing.T) {
		h := newBlockHarness(t, t0.Add(30*time.Second), errors.New("leader key gone"),
			queued(t, "x", execFunc(succeed)), queued(t, "y", execFunc(succeed)))
		h.lead(token)
		h.advance(time.Minute, 1)
		h.waitRows("y", "y's first run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
		h.ledger.raise("x", token+1) // a newer leader
		h.advance(time.Minute, 1)
		if err := h.term.ended("Lead did not step down when etcd did not confirm the term"); !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("Lead=%v, want ErrFenced", err)
		}
		if h.confirms.Load() == 0 {
			t.Fatal("the runner did not ask etcd before stepping down")
		}
		if b := h.runner.Blocked(); len(b) != 0 {
			t.Fatalf("blocked=%+v after stepping down, want none", b)
		}
	})

	t.Run("BlocksAtTakeover", func(t *testing.T) {
		h := newBlockHarness(t, t0.Add(30*time.Second), nil,
			queued(t, "x", execFunc(succeed)), queued(t, "y", execFunc(succeed)))
		h.ledger.raise("x", outsideFence)
		h.lead(token)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "x blocked", func() bool { return len(h.runner.Blocked()) == 1 })
		h.advance(time.Minute, 1)
		h.waitRows("y", "y's run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
		h.running()
		if got := blockedJobs(h.runner); len(got) != 1 || got[0] != "x" {
			t.Fatalf("blocked=%v, want [x]", got)
		}
		if rows := h.rows("x"); len(rows) != 0 {
			t.Fatalf("x rows=%+v, want none", rows)
		}
		if err := h.stop(); err != nil {
			t.Fatalf("Lead=%v, want nil", err)
		}
		if b := h.runner.Blocked(); len(b) != 0 {
			t.Fatalf("blocked=%+v after the term, want none", b)
		}
	})

	t.Run("BlocksOnTheJobsOwnFencedWrite", func(t *testing.T) {
		own := execFunc(func(_ context.Context, r scheduler.Attempt) (string, error) {
			// What the store answers a job's fenced transaction, as the daemon's adapter maps it.
			return "", fmt.Errorf("write: %w", &scheduler.FenceError{Job: r.Job, Token: r.Token, Fence: outsideFence,
				Err: fmt.Errorf("token %d below fence %d: %w", r.Token, outsideFence, scheduler.ErrFenced)})
		})
		h := newBlockHarness(t, t0.Add(30*time.Second), nil, queued(t, "x", own), queued(t, "y", execFunc(succeed)))
		h.lead(token)
		h.advance(time.Minute, 1)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "x blocked", func() bool { return len(h.runner.Blocked()) == 1 })
		h.advance(time.Minute, 1)
		h.waitRows("y", "y's runs", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 2 })
		h.running()
	})

	t.Run("BlocksOnAClaimAtFireTime", func(t *testing.T) {
		// Slots claimed when they fire: one ClaimMany of both jobs, refused for x, made again for y.
		h := newBlockHarnessWith(t, t0.Add(30*time.Second), nil, func(o *Options) { o.ClaimAhead = -1 },
			queued(t, "x", execFunc(succeed)), queued(t, "y", execFunc(succeed)))
		h.lead(token)
		h.advance(time.Minute, 1)
		h.waitRows("y", "y's first run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
		h.ledger.raise("x", outsideFence)
		h.advance(time.Minute, 1)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "x blocked", func() bool { return len(h.runner.Blocked()) == 1 })
		h.waitRows("y", "y's second run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 2 })
		h.running()
		if rows := h.rows("x"); len(rows) != 1 {
			t.Fatalf("x rows=%+v, want only its run before the raise", rows)
		}
	})

	t.Run("BlocksOnTheOutcomeWrite", func(t *testing.T) {
		b := newBlocker()
		h := newBlockHarness(t, t0.Add(30*time.Second), nil, queued(t, "x", b), queued(t, "y", execFunc(succeed)))
		h.lead(token)
		h.advance(time.Minute, 1)
		<-b.started
		h.ledger.raise("x", outsideFence) // while x runs: its outcome write is refused
		close(b.release)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "x blocked", func() bool { return len(h.runner.Blocked()) == 1 })
		h.advance(time.Minute, 1)
		h.waitRows("y", "y's runs", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 2 })
		h.running()
		if rows := h.rows("x"); len(rows) != 1 || rows[0].Status != scheduler.StatusRunning {
			t.Fatalf("x rows=%+v, want its run left running (the store refused its outcome)", rows)
		}
	})

	t.Run("StepsDownWithoutConfirm", func(t *testing.T) {
		// A runner that cannot ask etcd keeps the old rule: any refusal ends the term.
		h := newHarness(t, t0.Add(30*time.Second), queued(t, "x", execFunc(succeed)))
		h.ledger.raise("x", outsideFence)
		h.lead(token)
		if err := h.term.ended("Lead did not step down"); !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("Lead=%v, want ErrFenced", err)
		}
	})
}

func TestRunner_ReceiverRefusalEndsOnlyTheRun(t *testing.T) {
	long := newBlocker()
	var calls atomic.Int32
	refuse := execFunc(func(context.Context, scheduler.Attempt) (string, error) {
		calls.Add(1)
		return "409 Conflict", scheduler.Permanent(fmt.Errorf("POST http://receiver: 409 Conflict: %w", scheduler.ErrRefused))
	})
	h := newHarness(t, t0.Add(30*time.Second),
		spec(t, "long", long, nil),
		spec(t, "hook", refuse, func(s *Spec) { s.Retries = 3 }))
	h.lead(token)
	h.advance(time.Minute, 1)
	first := <-long.started
	rows := h.waitRows("hook", "the refused run", func(r []ledgerRow) bool { return count(r, scheduler.StatusFenced) == 1 })
	if c := rows[0].Completion; c.Reason != "receiver refused the token" || c.Attempt != 1 {
		t.Fatalf("hook run %+v, want fenced, reason %q, attempt 1", c, "receiver refused the token")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the refused run was attempted %d times, want 1 (not retried)", n)
	}
	close(long.release)
	if err := <-long.ended; err != nil {
		t.Fatalf("the long run ended with %v: a receiver's refusal must not cancel the term's other runs", err)
	}
	rows = h.waitRows("long", "the long run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	if rows[0].Attempt != 1 || rows[0].Token != token || !rows[0].ScheduledAt.Equal(first.Slot) {
		t.Fatalf("long rows=%+v, want one success at attempt 1 with token %d", rows, token)
	}
	if over, err := h.term.returned(); over {
		t.Fatalf("Lead returned %v: a receiver's refusal must not end the term", err)
	}
	if err := h.stop(); err != nil {
		t.Fatalf("Lead=%v, want nil", err)
	}
}
