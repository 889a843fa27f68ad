package attempts

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"

	"scheduler/internal/jobs/internal/clock"
	"scheduler/internal/testenv"
)

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

var errJob = errors.New("job failed")

// fakeLedger answers NextAttempt with next (or err) and counts the calls; its fenced writes are
// never called by these tests' executors.
type fakeLedger struct {
	scheduler.Fencer
	mu    sync.Mutex
	next  int
	err   error
	calls int
}

func (l *fakeLedger) NextAttempt(_ context.Context, _ int64, _ string, _ int64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	return l.next, l.err
}

// execFunc is an Executor of a function, which gets the attempt's number.
type execFunc func(ctx context.Context, a scheduler.Attempt) (string, error)

func (f execFunc) Execute(ctx context.Context, a scheduler.Attempt) (string, error) { return f(ctx, a) }

// failing fails the first n attempts with err, then succeeds.
func failing(n int, err error) execFunc {
	return func(_ context.Context, a scheduler.Attempt) (string, error) {
		if a.Attempt <= n {
			return "", err
		}
		return "ok", nil
	}
}

func newRunner(t *testing.T, c clock.Clock, l Ledger) *Runner {
	return &Runner{Clock: c, Ledger: l, Token: 7, Log: zaptest.NewLogger(t), MaxBackoff: time.Minute, WriteTimeout: time.Second}
}

// TestRunner_Run: how a run ends, for each way its attempts end.
func TestRunner_Run(t *testing.T) {
	for _, tc := range []struct {
		name       string
		exec       execFunc
		retries    int
		cause      error            // the run cancelled with it before it starts
		next       int              // NextAttempt's answer
		nextErr    error            // NextAttempt's error
		wantStatus scheduler.Status // "" when cut off
		wantFenced bool
		wantTry    int // the last attempt's number
		wantNext   int // NextAttempt calls
		wantReason string
	}{
		{name: "Succeeds", exec: failing(0, nil), wantStatus: scheduler.StatusSucceeded, wantTry: 1},
		{name: "PermanentIsNotRetried", exec: failing(9, scheduler.Permanent(errJob)), retries: 3, wantStatus: scheduler.StatusFailed, wantTry: 1},
		{name: "RetriedThenSucceeds", exec: failing(2, errJob), retries: 2, wantStatus: scheduler.StatusSucceeded, wantTry: 3, wantNext: 2},
		{name: "RetriesExhausted", exec: failing(9, errJob), retries: 2, wantStatus: scheduler.StatusFailed, wantTry: 3, wantNext: 2},
		{name: "NeverCountsDown", exec: failing(1, errJob), retries: 9, next: 5, wantStatus: scheduler.StatusSucceeded, wantTry: 5, wantNext: 1},
		{name: "RetryRecordFailsCountsOn", exec: failing(1, errJob), retries: 9, nextErr: errors.New("store down"), wantStatus: scheduler.StatusSucceeded, wantTry: 2, wantNext: 1},
		{name: "FencedWrite", exec: failing(9, scheduler.ErrFenced), retries: 3, wantStatus: scheduler.StatusFenced, wantFenced: true, wantTry: 1},
		{name: "RefusedByReceiver", exec: failing(9, scheduler.ErrRefused), retries: 3, wantStatus: scheduler.StatusFenced, wantTry: 1, wantReason: reasonRefused},
		{name: "RetryFencedIsCut", exec: failing(9, errJob), retries: 3, nextErr: scheduler.ErrFenced, wantFenced: true, wantTry: 1, wantNext: 1},
		{name: "ReplacedFails", exec: func(ctx context.Context, _ scheduler.Attempt) (string, error) { return "", ctx.Err() }, cause: ErrReplaced,
			wantStatus: scheduler.StatusFailed, wantTry: 1, wantReason: "overlap: replace"},
		{name: "TermEndedIsCut", exec: func(ctx context.Context, _ scheduler.Attempt) (string, error) { return "", ctx.Err() }, retries: 3,
			cause: errors.New("leadership term ended"), wantTry: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &fakeLedger{next: tc.next, err: tc.nextErr}
			r := newRunner(t, clock.NewFake(t0), l)
			var c Cancel
			if tc.cause != nil {
				c.Do(tc.cause)
			}
			lr := scheduler.Run{RunID: 42, Job: "job", ScheduledAt: t0, Status: scheduler.StatusRunning, Token: 7}
			var out scheduler.Completion
			res := r.Run(context.Background(), &c, &Job{Name: "job", Executor: tc.exec, Timeout: time.Hour, Retries: tc.retries, Location: time.UTC}, &lr, &out)
			if res.Cut != (tc.wantStatus == "") || (!res.Cut && out.Status != tc.wantStatus) {
				t.Fatalf("cut=%v status=%s, want status %q (empty: cut)", res.Cut, out.Status, tc.wantStatus)
			}
			if (res.Fenced != nil) != tc.wantFenced || res.Attempt != tc.wantTry || l.calls != tc.wantNext {
				t.Fatalf("fenced=%v attempt=%d next=%d, want fenced %v, attempt %d, next %d", res.Fenced, res.Attempt, l.calls, tc.wantFenced, tc.wantTry, tc.wantNext)
			}
			if !res.Cut && (out.RunID != 42 || out.Job != "job" || out.Attempt != tc.wantTry || out.Reason != tc.wantReason) {
				t.Fatalf("completion %+v, want run 42 of job, attempt %d, reason %q", out, tc.wantTry, tc.wantReason)
			}
		})
	}
}

// TestRunner_AttemptCarriesTheTerm: each attempt gets the term's token, the run id, its slot in
// the job's zone and the store to write through.
func TestRunner_AttemptCarriesTheTerm(t *testing.T) {
	l := &fakeLedger{}
	r := newRunner(t, clock.NewFake(t0), l)
	zone := time.FixedZone("X", 3600)
	var got scheduler.Attempt
	exec := execFunc(func(_ context.Context, a scheduler.Attempt) (string, error) { got = a; return "", nil })
	lr := scheduler.Run{RunID: 42, Job: "job", ScheduledAt: t0, Manual: true}
	r.Run(context.Background(), &Cancel{}, &Job{Name: "job", Executor: exec, Timeout: time.Hour, Location: zone}, &lr, &scheduler.Completion{})
	if got.Token != 7 || got.RunID != "42" || got.Attempt != 1 || !got.Manual || got.Slot.Location() != zone || !got.Slot.Equal(t0) || got.Fencer != Ledger(l) {
		t.Fatalf("attempt %+v, want token 7, run id 42, attempt 1, manual, slot %s in X, the ledger as fencer", got, t0)
	}
}

// TestRunner_Timeout: an attempt past the job's timeout, on the runner's clock, fails saying it
// timed out.
func TestRunner_Timeout(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newRunner(t, clk, &fakeLedger{})
	exec := execFunc(func(ctx context.Context, _ scheduler.Attempt) (string, error) { <-ctx.Done(); return "", ctx.Err() })
	got := make(chan Result, 1)
	var out scheduler.Completion
	go func() {
		got <- r.Run(context.Background(), &Cancel{}, &Job{Name: "job", Executor: exec, Timeout: time.Minute, Location: time.UTC}, &scheduler.Run{RunID: 1, Job: "job", ScheduledAt: t0}, &out)
	}()
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the attempt's timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(time.Minute)
	res := <-got
	if res.Cut || out.Status != scheduler.StatusFailed || !strings.Contains(out.Error, "timed out after 1m0s") {
		t.Fatalf("result %+v %+v, want failed, saying it timed out after 1m0s", res, out)
	}
}

// TestRunner_Final: a run made final is not retried. Made final during its wait before a retry,
// it ends failed at once with the last attempt's error; made final during an attempt, that
// attempt runs to its end (not cancelled), and no other starts. Neither records a retry.
func TestRunner_Final(t *testing.T) {
	for _, during := range []string{"wait", "attempt"} {
		t.Run(during, func(t *testing.T) {
			clk, l, c := clock.NewFake(t0), &fakeLedger{}, &Cancel{}
			r := newRunner(t, clk, l)
			entered, release, returned := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
			exec := execFunc(func(ctx context.Context, _ scheduler.Attempt) (string, error) {
				entered <- struct{}{}
				if during == "attempt" {
					<-release
				} else {
					defer close(returned)
				}
				return "", ctx.Err() // nil unless the attempt was cancelled
			})
			got := make(chan Result, 1)
			var out scheduler.Completion
			go func() {
				job := &Job{Name: "job", Executor: execFunc(func(ctx context.Context, a scheduler.Attempt) (string, error) {
					_, err := exec(ctx, a)
					return "", errors.Join(err, errJob)
				}), Timeout: time.Hour, Retries: 5, RetryBackoff: time.Minute, Location: time.UTC}
				got <- r.Run(context.Background(), c, job, &scheduler.Run{RunID: 1, Job: "job", ScheduledAt: t0}, &out)
			}()
			<-entered
			if during == "wait" {
				<-returned // Final lands before the wait or during it: either way no retry starts
			}
			c.Final()
			close(release)
			res := <-got
			if res.Cut || res.Attempt != 1 || out.Status != scheduler.StatusFailed || out.Reason != ReasonNotRetried || out.Error != errJob.Error() || l.calls != 0 {
				t.Fatalf("result %+v %+v, %d retries recorded; want attempt 1 failed with %q, not retried, none recorded", res, out, l.calls, errJob)
			}
		})
	}
}

// slowNext is a ledger whose NextAttempt (the record of a retry) waits for release.
type slowNext struct {
	scheduler.Fencer
	entered chan struct{}
	release chan struct{}
}

func (l *slowNext) NextAttempt(context.Context, int64, string, int64) (int, error) {
	l.entered <- struct{}{}
	<-l.release
	return 0, nil
}

// TestRunner_FinalDuringRetryRecord: Final lands after the wait before a retry, while the retry
// is being recorded (a slow store). No other attempt starts: the run ends failed with attempt 1.
func TestRunner_FinalDuringRetryRecord(t *testing.T) {
	l := &slowNext{entered: make(chan struct{}), release: make(chan struct{})}
	r := newRunner(t, clock.Real{}, nil)
	r.Ledger = l
	var attempted atomic.Int32
	job := &Job{Name: "job", Timeout: time.Hour, Retries: 5, RetryBackoff: time.Millisecond, Location: time.UTC,
		Executor: execFunc(func(context.Context, scheduler.Attempt) (string, error) { attempted.Add(1); return "", errJob })}
	c := &Cancel{}
	var out scheduler.Completion
	done := make(chan Result, 1)
	go func() {
		done <- r.Run(context.Background(), c, job, &scheduler.Run{RunID: 1, Job: "job", ScheduledAt: t0}, &out)
	}()
	<-l.entered
	c.Final()
	close(l.release)
	res := <-done
	if n := attempted.Load(); n != 1 || res.Attempt != 1 || out.Reason != ReasonNotRetried {
		t.Fatalf("%d attempts, result %+v %+v; want 1 attempt, failed, not retried", n, res, out)
	}
}
