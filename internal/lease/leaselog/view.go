package leaselog

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"scheduler/internal/lease"
)

// View is an observer's view of who leads an election: the leader last
// read, of a backend's type L, if any. It logs every change of leader. It
// is safe for concurrent use.
type View[L any] struct {
	lg  *zap.Logger
	who func(L) (node string, token int64)

	mu       sync.Mutex
	cur      L
	ok       bool
	problems []string
}

// Problems returns what the last read found keeping the election from
// working, each with its remedy, as SetProblems recorded it.
func (v *View[L]) Problems() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.problems
}

// SetProblems records what the last read found keeping the election from
// working; nil when nothing.
func (v *View[L]) SetProblems(p []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.problems = p
}

// NewView returns an empty View that logs to lg, reading a leader's node
// and token with who.
func NewView[L any](lg *zap.Logger, who func(L) (node string, token int64)) *View[L] {
	return &View[L]{lg: lg, who: who}
}

// Current returns the leader as last read. ok is false when nobody leads
// or the last read failed.
func (v *View[L]) Current() (l L, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cur, v.ok
}

// Set records l as the leader, or nobody when ok is false, and logs a
// change of leader.
func (v *View[L]) Set(l L, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	node, token := v.who(l)
	if _, was := v.who(v.cur); ok != v.ok || token != was {
		v.lg.Info("leader changed", zap.Bool("known", ok), zap.String("leader", node), zap.Int64("token", token))
	}
	v.cur, v.ok = l, ok
}

// Poll keeps v current until ctx is cancelled, then returns. It reads the
// leader with read again on every note, at least every poll, and when the
// lease read would expire unless renewed (read's remaining, when above
// zero). An error matching noLeader (errors.Is) says that nobody leads;
// another clears the view too, and the first of a row is logged as a
// warning.
func Poll[L any](ctx context.Context, v *View[L], read func(context.Context) (l L, remaining time.Duration, err error),
	noLeader error, poll time.Duration, notes <-chan struct{}) {
	failures := 0
	for {
		l, remaining, err := read(ctx)
		var none L
		switch {
		case err == nil:
			failures = 0
			v.Set(l, true)
		case errors.Is(err, noLeader):
			failures = 0
			v.Set(none, false)
		case ctx.Err() == nil:
			failures++
			v.Set(none, false)
			if failures == 1 {
				v.lg.Warn("observe leader", zap.Error(err))
			}
		}
		wait := poll
		if err == nil && remaining > 0 {
			// Look again when the lease would expire without a renewal.
			wait = min(wait, remaining+5*time.Millisecond)
		}
		if !lease.Await(ctx, wait, notes) {
			return
		}
	}
}
