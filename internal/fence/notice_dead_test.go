package fence

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"scheduler"
)

// deadNotice is a notice of the invoices job's slot that one of its messages went dead.
func deadNotice() *scheduler.Notice {
	return &scheduler.Notice{Messages: []scheduler.Message{{Key: "notify.invoices.1.dead.e", Kind: scheduler.MessageEmail,
		Destination: "ops@example.test", Subject: "invoices dead", Body: "550 no such user"}}}
}

// TestStore_RecordDeadNotice: the record of a message's death queues its notice in the same
// write, on the dead message's job and slot, once for the slot however many of its messages die;
// a stale dispatcher's record queues nothing, and only a dead outcome may carry a notice.
func TestStore_RecordDeadNotice(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return outboxNow }}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := enqueueAll(ctx, s, 10, mail("inv.1", 10), mail("inv.2", 10), mail("inv.3", 10)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ClaimOutbox(ctx, 10, 2, outboxNow); err != nil || len(got) != 2 {
			t.Fatalf("claim: %d claimed (err %v), want 2", len(got), err)
		}
		at := outboxNow.Add(time.Second)
		dead := scheduler.Delivery{Outcome: scheduler.DeliveryDead, Error: "550 no such user", At: at, Notice: deadNotice()}
		for _, key := range []string{"inv.1", "inv.2", "inv.1"} {
			if err := s.RecordDelivery(ctx, 10, key, dead); err != nil {
				t.Fatalf("record %s dead: %v", key, err)
			}
		}
		var notices []scheduler.Message
		for _, m := range mustOutbox(t, ctx, s, "") {
			if strings.HasPrefix(m.Key, "notify.") {
				notices = append(notices, m)
			}
		}
		if len(notices) != 1 {
			t.Fatalf("%d notices queued, want 1: %+v", len(notices), notices)
		}
		if n := notices[0]; n.Job != "invoices" || !n.ScheduledAt.Equal(outboxNow) || n.Token != 10 || n.Status != scheduler.MessagePending {
			t.Fatalf("notice %+v: want the dead message's job and slot, token 10, pending", n)
		}
		retry := scheduler.Delivery{Outcome: scheduler.DeliveryRetry, Error: "421", At: at, Next: at, Notice: deadNotice()}
		if err := s.RecordDelivery(ctx, 10, "inv.2", retry); err == nil {
			t.Fatal("a retried outcome with a notice recorded, want it refused")
		}
		// A newer dispatcher claims; the older one's record of inv.3 dies with its notice.
		if _, err := s.ClaimOutbox(ctx, 11, 10, outboxNow); err != nil {
			t.Fatal(err)
		}
		late := dead
		late.Notice = deadNotice()
		late.Notice.Messages[0].Key = "notify.invoices.1.dead.late"
		if err := s.RecordDelivery(ctx, 10, "inv.3", late); !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("stale record: err %v, want ErrFenced", err)
		}
		for _, m := range mustOutbox(t, ctx, s, "") {
			if m.Key == "notify.invoices.1.dead.late" {
				t.Fatalf("a stale record queued %+v", m)
			}
		}
	})
}
