package fence

import (
	"context"
	"errors"
	"testing"
	"time"

	"scheduler"
)

// TestStore_RecordDeliveryRepeated: a record made again by the same term with the same outcome
// succeeds, as a dispatcher repeats a record whose reply the store's restart lost; any other
// record of a message no longer sending under the token fails with ErrNotClaimed, and a newer
// term's claim makes the old term's repeat stale.
func TestStore_RecordDeliveryRepeated(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return outboxNow }}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := enqueueAll(ctx, s, 10, mail("inv.ok", 10), mail("inv.retry", 10), mail("inv.dead", 10)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ClaimOutbox(ctx, 10, 10, outboxNow); err != nil || len(got) != 3 {
			t.Fatalf("claim: %d claimed (err %v), want 3", len(got), err)
		}
		at := outboxNow.Add(time.Second)
		records := map[string]scheduler.Delivery{
			"inv.ok":    {Outcome: scheduler.DeliveryOK, At: at},
			"inv.retry": {Outcome: scheduler.DeliveryRetry, Error: "reply 503", At: at, Next: at.Add(time.Minute)},
			"inv.dead":  {Outcome: scheduler.DeliveryDead, Error: "550 no such user", At: at},
		}
		for key, d := range records {
			for i := range 2 {
				if err := s.RecordDelivery(ctx, 10, key, d); err != nil {
					t.Fatalf("record %d of %s (%s): %v", i+1, key, d.Outcome, err)
				}
			}
		}
		for key, d := range map[string]scheduler.Delivery{
			"inv.ok":    {Outcome: scheduler.DeliveryOK, At: at.Add(time.Second)},
			"inv.retry": {Outcome: scheduler.DeliveryRetry, Error: "reply 503", At: at, Next: at.Add(time.Hour)},
			"inv.dead":  {Outcome: scheduler.DeliveryOK, At: at},
		} {
			if err := s.RecordDelivery(ctx, 10, key, d); !errors.Is(err, ErrNotClaimed) {
				t.Fatalf("another record of %s: err %v, want ErrNotClaimed", key, err)
			}
		}
		msgs := map[string]scheduler.Message{}
		for _, m := range mustOutbox(t, ctx, s, "") {
			msgs[m.Key] = m
		}
		if m := msgs["inv.ok"]; m.Status != scheduler.MessageDelivered || !m.Delivered.Equal(at) {
			t.Errorf("delivered message = %+v", m)
		}
		if m := msgs["inv.retry"]; m.Status != scheduler.MessagePending || !m.NextAttempt.Equal(at.Add(time.Minute)) {
			t.Errorf("retried message = %+v", m)
		}
		if m := msgs["inv.dead"]; m.Status != scheduler.MessageDead {
			t.Errorf("dead message = %+v", m)
		}
		// Term 11 claims the retried message: term 10's repeat is stale, not a success.
		if got, err := s.ClaimOutbox(ctx, 11, 10, at.Add(time.Hour)); err != nil || len(got) != 1 {
			t.Fatalf("claim of term 11: %d claimed (err %v), want 1", len(got), err)
		}
		if err := s.RecordDelivery(ctx, 10, "inv.retry", records["inv.retry"]); !errors.Is(err, ErrStale) {
			t.Fatalf("repeat by term 10 after term 11 claimed: err %v, want ErrStale", err)
		}
	})
}
