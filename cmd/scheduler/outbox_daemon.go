package main

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"scheduler/internal/outbox"
)

// dispatch delivers the outbox for the term with token until ctx ends. It returns an error,
// wrapping scheduler.ErrFenced, only when the store refused token and the election no longer
// confirms the term: a newer leader raised the outbox's fence, and the term's work must end. A
// refusal while the term is confirmed blocks the outbox alone, as it blocks a job.
func (d *daemon) dispatch(ctx context.Context, token int64) error {
	err := d.outbox.RunConfirmed(ctx, token, d.camp.Confirm)
	if errors.Is(err, outbox.ErrFenced) {
		d.lg.Warn("outbox fenced out: the term ends", zap.Int64("token", token), zap.Error(err))
		return err
	}
	if err != nil {
		d.lg.Error("outbox stopped for this term", zap.Int64("token", token), zap.Error(err))
	}
	return nil
}
