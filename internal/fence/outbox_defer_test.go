package fence

import (
	"errors"
	"testing"
	"time"

	"context"

	"scheduler"
)

// TestStore_DeferOutbox: the messages named, sending under the term's own token, go back to
// pending, due when the dispatcher says and their claim's attempt not counted; another message
// of the same claim, a delivered one and one never claimed are left alone; a stale token defers
// nothing; the next claim skips the deferred message until it is due.
func TestStore_DeferOutbox(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return outboxNow }}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := enqueueAll(ctx, s, 10, mail("inv/a", 10), mail("inv/b", 10), mail("inv/c", 10), mail("inv/d", 10)); err != nil {
			t.Fatal(err)
		}
		claimed, err := s.ClaimOutbox(ctx, 11, 3, outboxNow)
		if err != nil || len(claimed) != 3 {
			t.Fatalf("claim of term 11: %d (err %v)", len(claimed), err)
		}
		if err := s.RecordDelivery(ctx, 11, claimed[2].Key, scheduler.Delivery{Outcome: scheduler.DeliveryOK, At: outboxNow}); err != nil {
			t.Fatal(err)
		}
		next := outboxNow.Add(time.Minute)
		if _, err := s.DeferOutbox(ctx, 9, []string{claimed[0].Key}, outboxNow, next); !errors.Is(err, ErrStale) {
			t.Fatalf("defer with a stale token: err %v, want ErrStale", err)
		}
		n, err := s.DeferOutbox(ctx, 11, []string{claimed[0].Key, claimed[2].Key, "inv/d"}, outboxNow, next)
		if err != nil || n != 1 {
			t.Fatalf("defer of term 11: %d (err %v), want 1", n, err)
		}
		for _, m := range mustOutbox(t, ctx, s, "") {
			switch m.Key {
			case claimed[0].Key:
				if m.Status != scheduler.MessagePending || m.Attempts != 0 || !m.NextAttempt.Equal(next) {
					t.Errorf("deferred message %+v, want pending, due at %s, no attempt counted", m, next)
				}
			case claimed[1].Key:
				if m.Status != scheduler.MessageSending || m.Attempts != 1 {
					t.Errorf("message of the claim not named %+v, want still sending", m)
				}
			case claimed[2].Key:
				if m.Status != scheduler.MessageDelivered {
					t.Errorf("delivered message %+v deferred", m)
				}
			case "inv/d":
				if m.Status != scheduler.MessagePending || m.Attempts != 0 || !m.NextAttempt.Equal(outboxNow) {
					t.Errorf("message never claimed %+v changed", m)
				}
			}
		}
		if again, err := s.ClaimOutbox(ctx, 11, 10, outboxNow); err != nil || len(again) != 1 || again[0].Key != "inv/d" {
			t.Fatalf("claim before the deferred message is due: %+v (err %v), want inv/d alone", again, err)
		}
		if again, err := s.ClaimOutbox(ctx, 11, 10, next); err != nil || len(again) != 1 || again[0].Key != claimed[0].Key || again[0].Attempts != 1 {
			t.Fatalf("claim once it is due: %+v (err %v), want %s at attempt 1", again, err, claimed[0].Key)
		}
	})
}
