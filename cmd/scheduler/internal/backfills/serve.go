package backfills

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"scheduler/internal/backfill"
	"scheduler/internal/control"
	"scheduler/internal/jobs"
	"scheduler/internal/retention"
)

// DefaultPoll is how often a leader looks for new backfill requests: a backfill is an
// operator's action, for which a second is no delay.
const DefaultPoll = time.Second

// Leader is what Serve works with: the term's runner and store, the control state, and this
// replica's node name.
type Leader struct {
	State  State
	Runner interface {
		backfill.Runner
		Table() []jobs.Spec
	}
	Ledger backfill.Ledger
	Node   string
	Logger *zap.Logger
	// Poll is how often new requests are looked for; default DefaultPoll.
	Poll time.Duration
	// Now is the clock that bounds a request's slots (those to come are the schedule's);
	// default time.Now.
	Now func() time.Time
	// Retention returns the retention of the table's jobs, which a request must not outrun (see
	// CheckRetention), as `scheduler backfill` checks it; nil, or a job left out: no limit.
	Retention func() []retention.Policy
}

// Serve works through the unfinished backfill requests of the control state while ctx lasts
// (a leadership term): one at a time, oldest first. A request the term does not finish stays as
// it is, and the next leader carries on with it from the ledger.
func (l Leader) Serve(ctx context.Context) {
	if l.Poll <= 0 {
		l.Poll = DefaultPoll
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	if l.Logger == nil {
		l.Logger = zap.NewNop()
	}
	// The unreadable requests reported this term, by key and reason, so that each is logged
	// once however often it is read, and again if it is written anew.
	reported := map[string]bool{}
	for {
		reqs, err := l.State.Backfills(ctx)
		if err != nil && ctx.Err() == nil {
			l.Logger.Warn("read backfill requests", zap.Error(err))
		}
		seen := map[string]bool{}
		for _, b := range reqs {
			switch {
			case ctx.Err() != nil:
				return
			case b.Unreadable != "":
				seen[b.Key+"\x00"+b.Unreadable] = true
				if !reported[b.Key+"\x00"+b.Unreadable] {
					l.Logger.Warn("ignoring backfill request", zap.String("reason", b.Unreadable))
				}
			case !b.Finished():
				l.serve(ctx, b)
			}
		}
		if err == nil {
			reported = seen
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(l.Poll):
		}
	}
}

// serve carries out one request and records its progress and end.
func (l Leader) serve(ctx context.Context, b control.Backfill) {
	lg := l.Logger.With(zap.String("job", b.Job), zap.Int64("backfill", b.ID))
	save := func(b control.Backfill) {
		b.Node = l.Node
		if err := l.State.UpdateBackfill(ctx, b); err != nil && ctx.Err() == nil {
			lg.Warn("record backfill progress", zap.Error(err))
		}
	}
	req, err := l.request(b)
	switch now := l.Now(); {
	case err != nil:
	case b.State == control.BackfillRunning:
		// Checked when it started. Carried on (or written by hand as running), it leaves out the
		// slots aged past the job's history.max_age since: a run of one may have been pruned,
		// and its run is how the leader knows it was done.
		if req.Slots = l.unaged(b.Job, req.Slots, now, lg); len(req.Slots) == 0 {
			err = errors.New("its slots have aged past the job's history.max_age: their runs may have been pruned, and they would run again")
		}
	default: // retention is checked as the command checks it
		err = l.retained(b.Job, req.Slots, now)
	}
	if err != nil {
		lg.Warn("backfill refused", zap.Error(err))
		b.State, b.Error = control.BackfillRefused, err.Error()
		save(b)
		return
	}
	b.State, b.Total = control.BackfillRunning, len(req.Slots)
	save(b)
	count := func(p backfill.Progress) {
		b.Total, b.Done, b.Succeeded, b.Failed, b.Skipped = p.Total, p.Done, p.Succeeded, p.Failed, p.Skipped
	}
	cfg := backfill.Config{Runner: l.Runner, Ledger: l.Ledger, Logger: lg, Still: func() error {
		_, err := l.request(b)
		return err
	}}
	p, err := backfill.Run(ctx, cfg, req, func(p backfill.Progress) {
		count(p)
		save(b)
	})
	switch {
	case ctx.Err() != nil:
		return // the term ended: the next leader carries on
	case errors.Is(err, backfill.ErrBadRequest):
		b.State, b.Error = control.BackfillRefused, err.Error()
	case err != nil:
		lg.Warn("backfill stopped; the next term carries on", zap.Error(err))
		return
	default:
		b.State = control.BackfillDone
		count(p)
	}
	save(b)
}

// request turns a request of the control state into the slots of its job in the leader's table.
func (l Leader) request(b control.Backfill) (backfill.Request, error) {
	var spec *jobs.Spec
	for _, s := range l.Runner.Table() {
		if s.Name == b.Job {
			spec = &s
			break
		}
	}
	if spec == nil {
		return backfill.Request{}, errors.New("no such job in the leader's table")
	}
	overlap, err := Overlap(b.Overlap, spec.Overlap)
	if err != nil {
		return backfill.Request{}, err
	}
	if b.From.IsZero() || b.To.IsZero() {
		return backfill.Request{}, errors.New("no range: the request needs both from and to")
	}
	to := b.To
	if now := l.Now(); to.After(now) {
		to = now
	}
	slots, err := Slots(spec.Schedule, b.From, to)
	switch {
	case err != nil:
		return backfill.Request{}, err
	case len(slots) == 0:
		return backfill.Request{}, fmt.Errorf("no slots of the job's schedule from %s to %s", stamp(b.From), stamp(to))
	}
	return backfill.Request{Job: b.Job, ID: b.ID, Slots: slots, Rerun: b.Rerun, Overlap: overlap}, nil
}

// unaged returns the slots not older than the job's history.max_age, and logs how many it left
// out.
func (l Leader) unaged(job string, slots []time.Time, now time.Time, lg *zap.Logger) []time.Time {
	p, ok := l.retentionOf(job)
	if !ok || p.MaxAge <= 0 {
		return slots
	}
	cut := now.Add(-p.MaxAge)
	kept := slices.DeleteFunc(slices.Clone(slots), func(at time.Time) bool { return at.Before(cut) })
	if n := len(slots) - len(kept); n > 0 {
		lg.Warn("backfill carried on without its slots older than the job's history.max_age: their runs may have been pruned, and they would run again",
			zap.Int("left_out", n), zap.Duration("max_age", p.MaxAge))
	}
	return kept
}

// retentionOf returns the job's retention policy, and false when it has none.
func (l Leader) retentionOf(job string) (retention.Policy, bool) {
	if l.Retention == nil {
		return retention.Policy{}, false
	}
	for _, p := range l.Retention() {
		if p.Job == job {
			return p, true
		}
	}
	return retention.Policy{}, false
}

// retained refuses slots that the job's retention would prune as soon as their runs are written,
// as CheckRetention does for `scheduler backfill`: a request written by hand gets the same
// answer as one the command submits.
func (l Leader) retained(job string, slots []time.Time, now time.Time) error {
	if p, ok := l.retentionOf(job); ok {
		return CheckRetention(slots, p.MaxAge, p.MaxRuns, now)
	}
	return nil
}
