// Package triggers hands the operators' trigger requests, kept in the control state until a
// leader has taken them, to the leader's runner.
//
// A request is removed from the control state once the runner has taken it (its manual slot
// claimed and started, or found run), when its job is not in the table, when its time lies
// more than MaxAhead past the leader's clock, or when it is older than the job's history.max_age
// (MaxAge); any other answer keeps it. A request kept because the runner answered that it is not leading waits for the
// next term, which reads the stored requests at its start (Pending). One kept because its job
// is held back (blocked: a fence raised or held from outside) is handed again every Retry while
// the term lasts, so that it runs in the same term once the job is free. Handing a request
// twice is harmless: its manual slot is keyed by its time, and the ledger runs a slot once.
package triggers

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"scheduler/internal/control"
	"scheduler/internal/jobs"
)

// DefaultRetry is how often a term hands its kept requests again when Handler.Retry is zero.
const DefaultRetry = 5 * time.Second

// MaxAhead is how far past the leader's clock a request's time may lie. A request is stamped
// with its requester's clock, and its manual slot is that time: a slot far ahead (a key written
// by hand, a clock gone wrong) would stand as the job's last run in `status` until then, so it
// is dropped; a clock a few minutes fast is not.
const MaxAhead = time.Hour

// Runner is the leader's runner as a trigger request needs it (*jobs.Runner).
type Runner interface {
	Trigger(ctx context.Context, job string, at time.Time) error
}

// Requests is the control state's store of trigger requests.
type Requests interface {
	Requests(ctx context.Context) ([]control.Request, error)
	Done(ctx context.Context, r control.Request) error
}

// Handler hands trigger requests to the runner. Its methods may be called concurrently.
type Handler struct {
	Runner   Runner
	Requests Requests
	Log      *zap.Logger
	// Retry is how often Pending hands the kept requests again; zero: DefaultRetry.
	Retry time.Duration
	// After is the clock Pending waits on; nil: time.After.
	After func(time.Duration) <-chan time.Time
	// Now is the clock a request's time is checked against (MaxAhead, MaxAge); nil: time.Now.
	Now func() time.Time
	// MaxAge returns the job's history.max_age (0: none); nil: no bound. A request for a slot
	// older than that is dropped: the retention prunes its run, and a request handed again then
	// (a key written twice, an etcd snapshot restored) would find no run and run the slot again.
	MaxAge func(job string) time.Duration

	mu sync.Mutex
	// warned holds the keys of the kept requests already logged at warning level, so that a
	// request handed again every Retry logs its reason once.
	warned map[string]bool
}

// Pending hands the stored requests to the runner at the start of a term, then again every
// Retry until ctx ends (the term's end): the requests stored while no replica led, and those
// kept since for a job held back.
func (h *Handler) Pending(ctx context.Context) {
	retry, after := h.Retry, h.After
	if retry <= 0 {
		retry = DefaultRetry
	}
	if after == nil {
		after = time.After
	}
	for {
		reqs, err := h.Requests.Requests(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			h.Log.Warn("read trigger requests", zap.Error(err))
		case err == nil:
			h.keepWarned(reqs)
			for _, r := range reqs {
				if ctx.Err() != nil {
					return
				}
				h.Handle(ctx, r)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-after(retry):
		}
	}
}

// Consume hands each request of reqs to the runner as it comes, until ctx ends or reqs is
// closed.
func (h *Handler) Consume(ctx context.Context, reqs <-chan control.Request) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case r, ok := <-reqs:
			if !ok {
				return nil // closed: the watcher's Run has returned
			}
			h.Handle(ctx, r)
		}
	}
}

// Handle hands r to the runner and removes it from the control state unless it must be kept.
func (h *Handler) Handle(ctx context.Context, r control.Request) {
	fields := []zap.Field{zap.String("job", r.Job), zap.Time("slot", r.At), zap.String("key", r.Key)}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	if ahead := r.At.Sub(now()); ahead > MaxAhead {
		h.Log.Warn("trigger dropped: its time is far ahead of the leader's clock",
			append(fields, zap.Duration("ahead", ahead.Round(time.Second)), zap.Duration("max_ahead", MaxAhead))...)
		h.done(ctx, r, fields)
		return
	}
	if maxAge := h.maxAge(r.Job); maxAge > 0 && now().Sub(r.At) > maxAge {
		h.Log.Warn("trigger dropped: its slot is older than the job's history.max_age, so its run would be pruned and the request could run the slot again",
			append(fields, zap.Duration("age", now().Sub(r.At).Round(time.Second)), zap.Duration("max_age", maxAge))...)
		h.done(ctx, r, fields)
		return
	}
	err := h.Runner.Trigger(ctx, r.Job, r.At)
	switch {
	case errors.Is(err, jobs.ErrNotLeading):
		h.Log.Info("trigger left for the next term", append(fields, zap.Error(err))...)
		return
	case errors.Is(err, jobs.ErrUnknownJob):
		h.Log.Warn("trigger of a job not in the table dropped", append(fields, zap.Error(err))...)
	case err != nil && ctx.Err() != nil:
		return // the term ended while the runner took it: the next term hands it again
	case err != nil:
		if h.firstKept(r.Key) {
			h.Log.Warn("trigger kept until its job can run", append(fields, zap.Error(err))...)
		} else {
			h.Log.Debug("trigger still kept", append(fields, zap.Error(err))...)
		}
		return
	}
	h.done(ctx, r, fields)
}

// maxAge is the job's history.max_age, 0 for none.
func (h *Handler) maxAge(job string) time.Duration {
	if h.MaxAge == nil {
		return 0
	}
	return h.MaxAge(job)
}

// done removes r from the control state: it was taken, or is dropped.
func (h *Handler) done(ctx context.Context, r control.Request, fields []zap.Field) {
	h.forget(r.Key)
	if err := h.Requests.Done(ctx, r); err != nil && ctx.Err() == nil {
		h.Log.Warn("remove handled trigger request", append(fields, zap.Error(err))...)
	}
}

// firstKept records that the request with key is kept and reports whether it was not before.
func (h *Handler) firstKept(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.warned[key] {
		return false
	}
	if h.warned == nil {
		h.warned = map[string]bool{}
	}
	h.warned[key] = true
	return true
}

// keepWarned forgets the kept requests that are no longer stored (taken, or removed by hand), so
// that the record holds only requests still waiting.
func (h *Handler) keepWarned(reqs []control.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	stored := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		stored[r.Key] = true
	}
	for k := range h.warned {
		if !stored[k] {
			delete(h.warned, k)
		}
	}
}

// forget drops the record of a request no longer kept.
func (h *Handler) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.warned, key)
}
