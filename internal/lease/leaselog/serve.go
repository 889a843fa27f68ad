// Package leaselog serves a lease-style backend's term with the log lines every such backend
// writes: a failed renewal, a deadline passed with no renewal answered, a hold found gone, and how
// the term ended. It runs the campaign round of a backend whose lease is taken in one request (a
// lease row, a lock), and keeps an observer's view of the leader, logging its changes. Package
// lease logs nothing itself (it is a leaf); this package adds only zap to it, so that the backends
// share one wording of their terms' lives instead of three copies.
package leaselog

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/lease"
)

// Words name what a backend renews, in its log lines.
type Words struct {
	// Renewal names one renewal: "lease renewal" logs "lease renewal failed" and "lease renewal
	// deadline passed".
	Renewal string
	// Gone is the line logged when a renewal finds the term's hold lost: "lease gone".
	Gone string
	// Release is the line logged when giving a lease up failed: "release lease".
	Release string
}

// Serve leads term with h.Lead: it runs lead while r renews the hold, logs the renewals' failures
// (the first of a row as a warning, the rest at debug level), a passed deadline and a lost hold
// in w's words, then "leadership ended" with the reason, how long the term was held and what lead
// returned. It returns how long the term was held. r's OnDeadline, OnGone and OnFailed are
// replaced.
func Serve[T any](ctx context.Context, h *lease.Holding[T], term scheduler.Term, of T, ev lease.Events,
	granted time.Time, r lease.Renewal, w Words, lead lease.LeadFunc, lg *zap.Logger) time.Duration {
	r.OnDeadline = func(deadline time.Time, attempt int) {
		lg.Warn(w.Renewal+" deadline passed", zap.Time("deadline", deadline), zap.Int("attempt", attempt))
	}
	r.OnGone = func() { lg.Warn(w.Gone) }
	r.OnFailed = func(attempt int, err error) {
		if attempt == 1 {
			lg.Warn(w.Renewal+" failed", zap.Error(err))
		} else {
			lg.Debug(w.Renewal+" failed", zap.Int("attempt", attempt), zap.Error(err))
		}
	}
	held, reason, leadErr := h.Lead(ctx, term, of, ev, granted, r, lead)
	fields := []zap.Field{zap.String("reason", string(reason)), zap.Duration("held", held)}
	if leadErr != nil {
		fields = append(fields, zap.Error(leadErr))
	}
	if reason.Expected() {
		lg.Info("leadership ended", fields...)
	} else {
		lg.Warn("leadership ended", fields...)
	}
	return held
}

// RoundFailed returns the lease.Rounds.OnFailed hook that logs a failed campaign round to lg,
// as a warning when Campaign says it is loud, else at debug level.
func RoundFailed(lg *zap.Logger) func(lease.Failure) {
	return func(f lease.Failure) {
		if f.Loud && errors.Is(f.Err, lease.ErrNeedsOperator) {
			lg.Error("campaign round failed", zap.Int("attempt", f.Attempt), zap.Int("suppressed", f.Suppressed), zap.Error(f.Err))
			return
		}
		if f.Loud {
			lg.Warn("campaign round failed", zap.Int("attempt", f.Attempt), zap.Int("suppressed", f.Suppressed), zap.Error(f.Err))
			return
		}
		lg.Debug("campaign round failed", zap.Int("attempt", f.Attempt), zap.Error(f.Err))
	}
}
