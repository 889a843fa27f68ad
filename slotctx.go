package scheduler

import (
	"context"
	"time"
)

// attemptSlotKey is the context key of the slot an attempt's statements run for.
type attemptSlotKey struct{}

// attemptSlot is what WithSlot carries.
type attemptSlot struct {
	at     time.Time
	manual bool
}

// WithSlot returns ctx carrying the slot (its time, and whether it is a manual trigger's) of the
// attempt whose statements run under it, so that the store can hand them to a sql job's text
// beside its job and token. Attempt.FencedStatements sets it.
func WithSlot(ctx context.Context, at time.Time, manual bool) context.Context {
	return context.WithValue(ctx, attemptSlotKey{}, attemptSlot{at: at, manual: manual})
}

// SlotFrom returns the slot WithSlot put in ctx; ok is false when there is none.
func SlotFrom(ctx context.Context) (at time.Time, manual, ok bool) {
	s, ok := ctx.Value(attemptSlotKey{}).(attemptSlot)
	return s.at, s.manual, ok
}

// runSecretKey is the context key of the run secret an attempt's statements run with.
type runSecretKey struct{}

// WithRunSecret returns ctx carrying the run secret of the attempt whose statements run under it
// (Attempt.Secret), which the store hands to a sql job's text as scheduler.run_secret.
// Attempt.FencedStatements sets it.
func WithRunSecret(ctx context.Context, secret string) context.Context {
	return context.WithValue(ctx, runSecretKey{}, secret)
}

// RunSecretFrom returns the run secret WithRunSecret put in ctx, or "".
func RunSecretFrom(ctx context.Context) string {
	s, _ := ctx.Value(runSecretKey{}).(string)
	return s
}
