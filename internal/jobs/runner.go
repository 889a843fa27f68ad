package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/outcomes"
	"scheduler/internal/jobs/internal/refusal"
	"scheduler/internal/jobs/internal/runopts"
)

// ErrNotLeading answers a command (Trigger, Backfill) that no term can take: this replica does
// not lead, or its term is draining for a shutdown. ErrUnknownJob: the table has no such job.
var ErrNotLeading, ErrUnknownJob = errors.New("jobs: not the leader"), errors.New("no such job")

// Hooks are optional callbacks for metrics (runopts.Hooks).
type Hooks = runopts.Hooks

// Options configure a Runner (runopts.Options).
type Options = runopts.Options

// Runner runs the cron table while its replica leads: Lead is called once per leadership term
// and returns when the term ends. Between terms the Runner holds only the table; during one, a
// tenure (tenure.go) holds the term's state, owned by its firing loop.
type Runner struct {
	opts  Options
	lg    *zap.Logger
	clock Clock

	mu      sync.Mutex
	table   []*Spec
	current *tenure // the term being led; nil while following

	blocked refusal.Board // the current term's blocked jobs
	// unwritten holds the outcomes of runs whose executors returned in a term that ended
	// before the outcome was written (outcome.go).
	unwritten outcomes.Kept
}

// New returns a Runner for table.
func New(table []Spec, opts Options) (*Runner, error) {
	if err := opts.Fill(); err != nil {
		return nil, err
	}
	specs, err := checkTable(table)
	if err != nil {
		return nil, err
	}
	return &Runner{opts: opts, lg: opts.Logger, clock: opts.Clock, table: specs}, nil
}

func checkTable(table []Spec) ([]*Spec, error) {
	seen := make(map[string]bool, len(table))
	specs := make([]*Spec, 0, len(table))
	for i := range table {
		s := table[i]
		if err := s.Validate(); err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("job %q: listed twice", s.Name)
		}
		seen[s.Name] = true
		specs = append(specs, &s)
	}
	return specs, nil
}

// Table returns the current cron table.
func (r *Runner) Table() []Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Spec, len(r.table))
	for i, s := range r.table {
		out[i] = *s
	}
	return out
}

// SetTable replaces the cron table atomically. On a leader, new and changed jobs get their
// fences raised and their next slots computed; runs in flight finish as they were.
func (r *Runner) SetTable(table []Spec) error {
	specs, err := checkTable(table)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.table = specs
	t := r.current
	r.mu.Unlock()
	if t != nil {
		t.send(context.Background(), func() { t.reload(specs) })
	}
	return nil
}

// Trigger asks the leader to run job once, as the manual slot at, fenced and recorded like a
// scheduled one. A manual slot runs once: triggering the same (job, at) again finds it in the
// ledger. It fails with ErrNotLeading on a follower.
func (r *Runner) Trigger(ctx context.Context, job string, at time.Time) error {
	return r.command(ctx, "trigger", job, func(t *tenure) error { return t.trigger(job, at) })
}

// Backfill asks the leader to run a past scheduled slot for a backfill request (slot.Backfill
// set): it is claimed for the request (the ledger's backfill claim), fenced and run like a fired
// slot, and Backfill returns once it is claimed and its run started, or found with a run. Pause
// and overlap are the caller's to apply. It fails with ErrNotLeading on a follower.
func (r *Runner) Backfill(ctx context.Context, slot scheduler.SlotKey) error {
	return r.command(ctx, "backfill", slot.Job, func(t *tenure) error { return t.backfill(slot) })
}

// command runs fn on the loop of the term being led, for a request about job, and returns its
// answer.
func (r *Runner) command(ctx context.Context, what, job string, fn func(t *tenure) error) error {
	r.mu.Lock()
	t := r.current
	known := false
	for _, s := range r.table {
		known = known || s.Name == job
	}
	r.mu.Unlock()
	if !known {
		return fmt.Errorf("%s %q: %w", what, job, ErrUnknownJob)
	}
	if t == nil {
		return fmt.Errorf("%s %q: %w", what, job, ErrNotLeading)
	}
	errc := make(chan error, 1)
	if !t.send(ctx, func() { errc <- fn(t) }) {
		return fmt.Errorf("%s %q: %w", what, job, ErrNotLeading)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-t.exited:
		return fmt.Errorf("%s %q: %w", what, job, ErrNotLeading)
	}
}

// Drain is the first step of a graceful shutdown: the leader stops firing new slots and waits
// for its running jobs, and for the writes of their outcomes, until ctx ends (the shutdown
// grace), then cancels them and waits for them to stop. Cancelled runs stay running in the
// ledger, so the next leader takes them over and finishes their slots. Leadership is kept until
// the caller ends the term. On a follower Drain returns at once.
func (r *Runner) Drain(ctx context.Context) {
	r.mu.Lock()
	t := r.current
	r.mu.Unlock()
	if t == nil {
		return
	}
	idle := make(chan struct{})
	if !t.send(ctx, func() { t.drain(idle) }) {
		return
	}
	select {
	case <-idle:
		return
	case <-t.exited:
		return
	case <-ctx.Done():
	}
	t.send(context.Background(), func() { t.cancelRuns(errShutdown) })
	select {
	case <-idle:
	case <-t.exited:
	}
}

// Lead runs the cron table for one leadership term with token, until ctx ends (leadership lost
// or shutdown). Before anything else it raises every job's fence to token and catches up on
// missed slots. It returns an error wrapping ErrFenced when the store refuses the token: a
// newer leader exists, and the caller must step down. A refusal for one job while Confirm says
// the term holds blocks only that job (Blocked) and the term goes on.
func (r *Runner) Lead(ctx context.Context, token int64) error {
	run, err := r.Begin(token)
	if err != nil {
		return err
	}
	return run(ctx)
}

// Begin makes token's term the one led and returns Lead's work on it, to run once: a command
// sent once Begin returned (Trigger, Backfill) reaches the term, and waits for its takeover.
func (r *Runner) Begin(token int64) (run func(context.Context) error, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil {
		return nil, errors.New("jobs: Lead called while already leading")
	}
	t, specs := newTenure(r, token), r.table
	r.current = t
	return func(ctx context.Context) error {
		err := t.run(ctx, specs)
		t.raises.Wait() // the loop has exited: a raise answering now finds it gone
		t.unblockAll()
		r.mu.Lock()
		r.current = nil
		r.mu.Unlock()
		return err
	}, nil
}
