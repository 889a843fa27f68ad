package backfill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// Overlap is what a backfill slot does when another run of its job is in progress.
type Overlap string

// The overlap policies of a backfill.
const (
	// OverlapSkip: the slot is skipped (not run, nothing recorded) when another run of the job
	// is in progress as its turn comes; the slots run one after another.
	OverlapSkip Overlap = "skip"
	// OverlapQueue: the slot waits until no other run of the job is in progress; the slots run
	// one after another.
	OverlapQueue Overlap = "queue"
	// OverlapAllow: every slot starts at once, in slot order, whatever else runs.
	OverlapAllow Overlap = "allow"
)

// Valid reports whether o is one of the policies above.
func (o Overlap) Valid() bool { return o == OverlapSkip || o == OverlapQueue || o == OverlapAllow }

// ErrBadRequest wraps the reasons a request cannot be carried out at all.
var ErrBadRequest = errors.New("backfill: bad request")

// Runner is the leader's runner as a backfill uses it (jobs.Runner).
type Runner interface {
	// Backfill claims the past slot for the request slot.Backfill names and starts its run,
	// fenced and recorded like a fired slot; it returns once the claim is made.
	Backfill(ctx context.Context, slot scheduler.SlotKey) error
}

// Ledger is the run ledger as a backfill reads it (fence.Store).
type Ledger interface {
	// BackfillRuns returns the runs of job marked with the request id, oldest slot first.
	BackfillRuns(ctx context.Context, job string, id int64) ([]scheduler.Run, error)
	// SlotRuns returns the scheduled runs of job with slots in [from, to], oldest first.
	SlotRuns(ctx context.Context, job string, from, to time.Time) ([]scheduler.Run, error)
	// Running returns the running runs of job.
	Running(ctx context.Context, job string) ([]scheduler.Run, error)
}

// Request is a backfill as the leader carries it out.
type Request struct {
	Job string
	// ID names the request in the ledger; > 0.
	ID int64
	// Slots are the job's slots to run, oldest first, each a time of its schedule.
	Slots []time.Time
	// Rerun runs slots whose runs succeeded again, as their runs' next attempts; without it
	// they are skipped.
	Rerun bool
	// Overlap is how the slots overlap with the job's other runs.
	Overlap Overlap
}

// Progress counts a request's slots.
type Progress struct {
	Total     int `json:"total"`
	Done      int `json:"done"`      // decided: the rest
	Succeeded int `json:"succeeded"` // ran and succeeded
	Failed    int `json:"failed"`    // ran and failed, or was fenced or missed
	Skipped   int `json:"skipped"`   // not run: it had succeeded already, or overlap skip
}

// count adds a decided slot that ended with st.
func (p *Progress) count(st scheduler.Status) {
	p.Done++
	switch st {
	case scheduler.StatusSucceeded:
		p.Succeeded++
	case scheduler.StatusSkipped:
		p.Skipped++
	default:
		p.Failed++
	}
}

// Config is what Run works with.
type Config struct {
	Runner Runner
	Ledger Ledger
	// Logger receives a line per request and per slot retried, with job, backfill and slot
	// fields. nil: none.
	Logger *zap.Logger
	// Poll is how often a slot's run is looked up in the ledger while it runs. Default 100ms.
	Poll time.Duration
	// Retry is the wait before a slot whose claim failed is asked for again. Default 1s.
	Retry time.Duration
	// After waits on the caller's clock; nil: time.After.
	After func(time.Duration) <-chan time.Time
	// Still is asked, when the runner refuses a slot, whether the request can still be carried
	// out (its job may have left the table); an error ends Run with ErrBadRequest instead of
	// asking again. nil: it always can.
	Still func() error
}

// Defaults of Config.
const (
	DefaultPoll  = 100 * time.Millisecond
	DefaultRetry = time.Second
)

// work is one Run: its configuration and request.
type work struct {
	Config
	req Request
	lg  *zap.Logger
}

// Run carries out req: it reads which slots the ledger holds as decided by the request, then
// hands the others to the runner in slot order and follows their runs, calling report (if not
// nil) with the progress first and after each slot decided. It returns the final progress when
// every slot is decided, or ctx's error (the term ended: the next leader carries on), or an
// error wrapping ErrBadRequest.
func Run(ctx context.Context, cfg Config, req Request, report func(Progress)) (Progress, error) {
	var p Progress
	switch {
	case cfg.Runner == nil || cfg.Ledger == nil:
		return p, errors.New("backfill: no runner or no ledger")
	case req.Job == "" || req.ID <= 0:
		return p, fmt.Errorf("%w: job %q, id %d", ErrBadRequest, req.Job, req.ID)
	case !req.Overlap.Valid():
		return p, fmt.Errorf("%w: overlap %q", ErrBadRequest, req.Overlap)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	w := &work{Config: cfg, req: req, lg: cfg.Logger.With(zap.String("job", req.Job), zap.Int64("backfill", req.ID))}
	ours, err := cfg.Ledger.BackfillRuns(ctx, req.Job, req.ID)
	if err != nil {
		return p, fmt.Errorf("backfill %d of job %q: %w", req.ID, req.Job, err)
	}
	decided := make(map[int64]scheduler.Status, len(ours))
	for _, r := range ours {
		if r.Status.Terminal() {
			decided[r.ScheduledAt.UnixMicro()] = r.Status
		}
	}
	p.Total = len(req.Slots)
	var todo []time.Time
	for _, at := range req.Slots {
		if st, ok := decided[norm(at).UnixMicro()]; ok {
			p.count(st)
		} else {
			todo = append(todo, norm(at))
		}
	}
	w.lg.Info("backfill", zap.Int("slots", p.Total), zap.Int("done", p.Done), zap.String("overlap", string(req.Overlap)),
		zap.Bool("rerun", req.Rerun))
	tell := func() {
		if report != nil {
			report(p)
		}
	}
	tell()
	if req.Overlap == OverlapAllow {
		for _, at := range todo {
			if err := w.submit(ctx, at); err != nil {
				return p, err
			}
		}
	}
	for _, at := range todo {
		var st scheduler.Status
		if req.Overlap == OverlapAllow {
			st, err = w.follow(ctx, at)
		} else {
			st, err = w.slot(ctx, at)
		}
		if err != nil {
			return p, err
		}
		p.count(st)
		tell()
	}
	w.lg.Info("backfill done", zap.Int("slots", p.Total), zap.Int("succeeded", p.Succeeded), zap.Int("failed", p.Failed),
		zap.Int("skipped", p.Skipped))
	return p, nil
}

// errAgain says that a slot is to be asked for again: its claim did not land, or another run
// of the slot was in the way.
var errAgain = errors.New("ask again")

// slot runs the slot at and returns how it ended, applying the request's overlap.
func (w *work) slot(ctx context.Context, at time.Time) (scheduler.Status, error) {
	for {
		if w.req.Overlap != OverlapAllow {
			busy, err := w.busy(ctx)
			switch {
			case err != nil:
				w.lg.Warn("read the job's running runs; retrying", zap.Time("slot", at), zap.Duration("in", w.Retry), zap.Error(err))
				if err := w.wait(ctx, w.Retry); err != nil {
					return "", err
				}
				continue
			case busy && w.req.Overlap == OverlapSkip:
				w.lg.Info("backfill slot skipped: another run of the job is in progress", zap.Time("slot", at))
				return scheduler.StatusSkipped, nil
			case busy:
				if err := w.wait(ctx, w.Poll); err != nil {
					return "", err
				}
				continue
			}
		}
		if err := w.submit(ctx, at); err != nil {
			return "", err
		}
		st, err := w.follow(ctx, at)
		if !errors.Is(err, errAgain) {
			return st, err
		}
	}
}

// busy reports whether a run of the job other than this request's is in progress. The
// request's own running runs are the slot's (taken over when asked for), or ones an older
// leader left running under overlap allow, which are taken over when their slots come.
func (w *work) busy(ctx context.Context) (bool, error) {
	running, err := w.Ledger.Running(ctx, w.req.Job)
	if err != nil {
		return false, err
	}
	for _, r := range running {
		if r.BackfillID != w.req.ID {
			return true, nil
		}
	}
	return false, nil
}

// submit hands the slot at to the runner, asking again while it fails.
func (w *work) submit(ctx context.Context, at time.Time) error {
	key := scheduler.SlotKey{Job: w.req.Job, At: at, Backfill: w.req.ID, Rerun: w.req.Rerun}
	for {
		err := w.Runner.Backfill(ctx, key)
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		if w.Still != nil {
			if serr := w.Still(); serr != nil {
				return fmt.Errorf("%w: %w", ErrBadRequest, serr)
			}
		}
		w.lg.Warn("backfill slot; retrying", zap.Time("slot", at), zap.Duration("in", w.Retry), zap.Error(err))
		if err := w.wait(ctx, w.Retry); err != nil {
			return err
		}
	}
}

// follow reads the slot's run in the ledger until the slot is decided, and returns how it ended.
// errAgain: the slot is to be asked for again (slot asks; with overlap allow, follow does).
func (w *work) follow(ctx context.Context, at time.Time) (scheduler.Status, error) {
	for {
		runs, err := w.Ledger.SlotRuns(ctx, w.req.Job, at, at)
		if err != nil {
			w.lg.Warn("read the slot's run; retrying", zap.Time("slot", at), zap.Duration("in", w.Retry), zap.Error(err))
			if err := w.wait(ctx, w.Retry); err != nil {
				return "", err
			}
			continue
		}
		var run *scheduler.Run
		if len(runs) > 0 {
			run = &runs[0]
		}
		switch {
		case run != nil && run.BackfillID == w.req.ID && run.Status.Terminal():
			return run.Status, nil
		case run != nil && run.BackfillID == w.req.ID:
			// Running: this term's run, or an older leader's the runner took over.
		case run != nil && run.Status == scheduler.StatusSucceeded && !w.req.Rerun:
			return scheduler.StatusSkipped, nil
		default:
			// No run, another run of the slot in the way, or one the claim did not take over (it
			// waits for the store): asked for again once the way is clear.
			if err := w.wait(ctx, w.Poll); err != nil {
				return "", err
			}
			if w.req.Overlap != OverlapAllow {
				return "", errAgain
			}
			if err := w.submit(ctx, at); err != nil {
				return "", err
			}
			continue
		}
		if err := w.wait(ctx, w.Poll); err != nil {
			return "", err
		}
	}
}

// wait waits d, or until ctx ends.
func (w *work) wait(ctx context.Context, d time.Duration) error {
	select {
	case <-w.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// norm is a slot as the ledger keeps it.
func norm(at time.Time) time.Time { return at.UTC().Truncate(time.Microsecond) }
