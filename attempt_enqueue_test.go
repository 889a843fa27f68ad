package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
)

// TestAttempt_Enqueue: a message queued through an attempt is its job's, slot's and term's,
// whatever the kind set, and an attempt of a stale term queues nothing, on both stores.
func TestAttempt_Enqueue(t *testing.T) {
	fencetest.Each(t, time.Minute, func(ctx context.Context, t *testing.T, s *fence.Store) {
		slot := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
		a := scheduler.Attempt{Job: "invoices", Slot: slot, Token: 7, Attempt: 1, RunID: "r", Manual: true, Fencer: s}
		m := scheduler.Message{Key: "k.1", Job: "stock", Token: 99, ScheduledAt: slot.Add(time.Hour),
			Kind: scheduler.MessageEmail, Destination: "a@example.test", Subject: "s", Body: "b"}
		var queued []bool
		if err := a.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
			queued = queued[:0]
			for range 2 {
				ok, err := a.Enqueue(ctx, tx, m)
				if err != nil {
					return err
				}
				queued = append(queued, ok)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(queued) != 2 || !queued[0] || queued[1] {
			t.Fatalf("queued = %v, want the first and not the repeat", queued)
		}
		got, err := s.Outbox(ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Job != "invoices" || got[0].Token != 7 || !got[0].ScheduledAt.Equal(slot) || !got[0].Manual {
			t.Fatalf("outbox = %+v, want one message of invoices at %s, manual, token 7", got, slot)
		}
		if err := s.RaiseAll(ctx, []string{"invoices"}, 8); err != nil {
			t.Fatal(err)
		}
		m.Key = "k.2"
		err = a.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
			_, err := a.Enqueue(ctx, tx, m)
			return err
		})
		if !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("stale Enqueue: err %v, want ErrFenced", err)
		}
		if got, _ := s.Outbox(ctx, "", 10); len(got) != 1 {
			t.Fatalf("outbox after a stale enqueue = %+v, want the one message", got)
		}
	})
	t.Run("NoFencer", func(t *testing.T) {
		a := scheduler.Attempt{Job: "invoices", Token: 7}
		if _, err := a.Enqueue(context.Background(), nil, scheduler.Message{Key: "k"}); !errors.Is(err, scheduler.ErrNoFencer) {
			t.Fatalf("Enqueue = %v, want ErrNoFencer", err)
		}
	})
}
