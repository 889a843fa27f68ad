package attempts

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/backoff"
	"scheduler/internal/jobs/internal/clock"
)

// ErrReplaced is the cause of a run cancelled for a newer slot of its job (overlap: replace):
// unlike other causes, the run ends failed, with an outcome.
var ErrReplaced = errors.New("replaced by a newer slot (overlap: replace)")

var errTimeout = errors.New("attempt timed out")

// reasonRefused is the reason of a run whose receiver refused its token.
const reasonRefused = "receiver refused the token"

// ReasonNotRetried is the reason of a failed run that Cancel.Final kept from retrying.
const ReasonNotRetried = "not retried: the job was removed or disabled"

// Ledger is what Run needs of the store: the fenced writes of each attempt, and the record of a
// retry.
type Ledger interface {
	scheduler.Fencer
	// NextAttempt records a retry of a running run and returns its new attempt number.
	NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error)
}

// Runner runs the attempts of the runs of one leadership term.
type Runner struct {
	Clock  clock.Clock
	Ledger Ledger
	Token  int64       // the term's token, given to every attempt and write
	Log    *zap.Logger // the term's logger; each run's lines add its job, slot and run id
	// MaxBackoff caps the wait before a retry.
	MaxBackoff time.Duration
	// WriteTimeout bounds the record of a retry.
	WriteTimeout time.Duration
	// Scrub rewrites an attempt's error before a log line quotes it; nil: none.
	Scrub func(string) string
	// Live is every attempt's scheduler.Attempt.Live; nil: none.
	Live scheduler.LiveOutput
}

// Job is what Run reads of a job.
type Job struct {
	Name         string
	Executor     scheduler.Executor
	Timeout      time.Duration // per attempt
	Retries      int           // retries after a failed attempt
	RetryBackoff time.Duration // wait before the first retry; doubles per retry up to MaxBackoff
	Location     *time.Location
}

// Result is how a run ended; its outcome, unless Cut, is in the Completion Run was given.
type Result struct {
	// Cut: the run was cancelled for a cause other than ErrReplaced, and has no outcome.
	Cut bool
	// Fenced is the store's refusal of the term's token, when it refused one of the run's
	// writes; the runner settles it.
	Fenced error
	// Attempt is the number of the run's last attempt.
	Attempt int
}

// Run runs the claimed slot lr of job to its end: attempts with timeouts and retries with
// backoff, until one succeeds, fails for good, or c cancels the run. It sets out to the run's
// outcome unless the run is cut off. ctx carries the values of the term and is never
// cancelled; c is the run's cancellation. What only some runs need (retries, interruptions,
// their log lines) lives in the methods it calls, off every run's start path, and the
// arguments are pointers, so that the run's goroutine keeps a small stack.
func (r *Runner) Run(ctx context.Context, c *Cancel, job *Job, lr *scheduler.Run, out *scheduler.Completion) Result {
	attempt := max(lr.Attempt, 1)
	for {
		output, err := r.attempt(ctx, c, job, lr, attempt)
		*out = scheduler.Completion{RunID: lr.RunID, Job: job.Name, Output: output, Attempt: attempt}
		res := Result{Attempt: attempt}
		cause := c.Err()
		switch {
		case cause != nil && !errors.Is(cause, ErrReplaced):
			r.interrupted(lr, attempt, cause)
			return Result{Cut: true, Attempt: attempt}
		case cause != nil:
			out.Status, out.Error, out.Reason = scheduler.StatusFailed, ErrReplaced.Error(), "overlap: replace"
		case err == nil:
			out.Status = scheduler.StatusSucceeded
		case errors.Is(err, scheduler.ErrFenced):
			out.Status, out.Error = scheduler.StatusFenced, err.Error()
			res.Fenced = err
		case errors.Is(err, scheduler.ErrRefused):
			out.Status, out.Error, out.Reason = scheduler.StatusFenced, err.Error(), reasonRefused
		case scheduler.IsPermanent(err) || attempt > job.Retries:
			out.Status, out.Error = scheduler.StatusFailed, err.Error()
		case c.isFinal():
			out.Status, out.Error, out.Reason = scheduler.StatusFailed, err.Error(), ReasonNotRetried
		default:
			next, fenced := r.retry(ctx, c, job, lr, attempt, err)
			if fenced != nil {
				return Result{Cut: true, Fenced: fenced, Attempt: attempt}
			}
			if next == attempt && c.Err() == nil { // Final ended the wait
				out.Status, out.Error, out.Reason = scheduler.StatusFailed, err.Error(), ReasonNotRetried
				return res
			}
			attempt = next
			continue
		}
		return res
	}
}

// interrupted logs a run cut off by the end of the term or of the shutdown grace.
func (r *Runner) interrupted(lr *scheduler.Run, attempt int, cause error) {
	r.runLog(lr).Warn("run interrupted; the next leader takes it over", zap.Int("attempt", attempt), zap.NamedError("cause", cause))
}

// retry waits before the retry of a failed attempt and records it; it returns the next
// attempt's number, or the fence's refusal (the term is over). A run cancelled while waiting
// goes on with the same number: the next turn of Run reports the cancellation.
func (r *Runner) retry(ctx context.Context, c *Cancel, job *Job, lr *scheduler.Run, attempt int, err error) (int, error) {
	lg := r.runLog(lr)
	wait := backoff.Wait(job.RetryBackoff, r.MaxBackoff, attempt)
	lg.Warn("attempt failed; retrying", zap.Int("attempt", attempt), zap.Duration("in", wait), zap.String("error", r.scrub(err.Error())))
	if !r.sleep(ctx, c, wait) || c.isFinal() {
		return attempt, nil // cancelled, or made final: Run tells which
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.WriteTimeout)
	n, err := r.Ledger.NextAttempt(wctx, r.Token, job.Name, lr.RunID)
	cancel()
	switch {
	case c.isFinal() && c.Err() == nil: // made final while the retry was recorded
		return attempt, nil
	case errors.Is(err, scheduler.ErrFenced):
		lg.Warn("retry fenced out", zap.Error(err))
		return 0, err
	case err != nil:
		lg.Warn("record retry", zap.Error(err))
		attempt++
	default:
		// Never count down: a retry made while the store was unreachable was not recorded
		// there, but it was made.
		attempt = max(attempt+1, n)
	}
	// The first attempt's line is written by the runner, off the start path.
	lg.Info("run started", zap.Int("attempt", attempt))
	return attempt, nil
}

func (r *Runner) scrub(s string) string {
	if r.Scrub == nil {
		return s
	}
	return r.Scrub(s)
}

// runLog returns the logger of one run's own lines, with its identifying fields.
func (r *Runner) runLog(lr *scheduler.Run) *zap.Logger {
	return r.Log.With(zap.String("job", lr.Job), zap.Time("slot", lr.ScheduledAt), zap.Int64("run_id", lr.RunID))
}

// attempt runs the executor once, bounded by the job's timeout on the runner's clock.
func (r *Runner) attempt(ctx context.Context, c *Cancel, job *Job, lr *scheduler.Run, attempt int) (string, error) {
	actx, cancel, end := c.begin(ctx)
	defer end()
	timer := r.Clock.AfterFunc(job.Timeout, func() { cancel(errTimeout) })
	defer timer.Stop()
	run := scheduler.Attempt{Job: job.Name, Slot: lr.ScheduledAt.In(job.Location), Token: r.Token, Attempt: attempt,
		RunID: strconv.FormatInt(lr.RunID, 10), Manual: lr.Manual, Fencer: r.Ledger, Live: r.Live}
	out, err := job.Executor.Execute(actx, run)
	if err != nil && c.Err() == nil && errors.Is(context.Cause(actx), errTimeout) {
		err = fmt.Errorf("attempt %d timed out after %s: %w", attempt, job.Timeout, err)
	}
	return out, err
}

// sleep waits d on the runner's clock; false if the run was cancelled first.
func (r *Runner) sleep(ctx context.Context, c *Cancel, d time.Duration) bool {
	if d <= 0 {
		return c.Err() == nil
	}
	ctx, _, end := c.begin(ctx)
	defer end()
	ctx, endWait := c.waiting(ctx)
	defer endWait()
	timer := r.Clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return true
	case <-ctx.Done():
		return false
	}
}
