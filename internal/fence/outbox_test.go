package fence

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/sqlite"
)

// outboxNow is the store's clock in the outbox tests.
var outboxNow = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

// mail returns an e-mail message of the invoices job's 2 a.m. slot.
func mail(key string, token int64) scheduler.Message {
	return scheduler.Message{Key: key, Job: "invoices", ScheduledAt: outboxNow, Token: token, Kind: scheduler.MessageEmail,
		Destination: "client-1@example.test", Subject: "Invoice", Body: "Amount due: 10"}
}

// enqueueAll queues msgs in one transaction fenced with token on the invoices job.
func enqueueAll(ctx context.Context, s *Store, token int64, msgs ...scheduler.Message) (queued int, err error) {
	err = s.Fenced(ctx, "invoices", token, func(ctx context.Context, tx scheduler.Tx) error {
		queued = 0
		for _, m := range msgs {
			ok, err := s.Enqueue(ctx, tx, m)
			if err != nil {
				return err
			}
			if ok {
				queued++
			}
		}
		return nil
	})
	return queued, err
}

// mustOutbox lists every message with status.
func mustOutbox(t *testing.T, ctx context.Context, s *Store, status scheduler.MessageStatus) []scheduler.Message {
	t.Helper()
	msgs, err := s.Outbox(ctx, status, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// TestStore_Enqueue: a message exists only once the fenced transaction that queued it has
// committed, never when the transaction is fenced out or rolls back, and once per key.
func TestStore_Enqueue(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return outboxNow }}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
			t.Fatal(err)
		}

		t.Run("VisibleOnlyAfterCommit", func(t *testing.T) {
			err := s.Fenced(ctx, "invoices", 10, func(ctx context.Context, tx scheduler.Tx) error {
				if _, err := s.Enqueue(ctx, tx, mail("inv/1", 10)); err != nil {
					return err
				}
				if got := mustOutbox(t, ctx, s, ""); len(got) != 0 {
					t.Errorf("before the commit the outbox holds %d messages, want 0", len(got))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got := mustOutbox(t, ctx, s, scheduler.MessagePending)
			if len(got) != 1 {
				t.Fatalf("after the commit: %d pending messages, want 1", len(got))
			}
			m := got[0]
			if m.Key != "inv/1" || m.Token != 10 || m.Attempts != 0 || !m.NextAttempt.Equal(outboxNow) ||
				!m.ScheduledAt.Equal(outboxNow) || m.Subject != "Invoice" || m.Kind != scheduler.MessageEmail {
				t.Fatalf("queued message = %+v", m)
			}
		})
		t.Run("RedoQueuesNothingTwice", func(t *testing.T) {
			n, err := enqueueAll(ctx, s, 10, mail("inv/1", 10), mail("inv/2", 10))
			if err != nil || n != 1 {
				t.Fatalf("redo queued %d (err %v), want 1: only the new key", n, err)
			}
			if got := mustOutbox(t, ctx, s, ""); len(got) != 2 {
				t.Fatalf("outbox holds %d messages, want 2", len(got))
			}
		})
		t.Run("FencedOutNeverExists", func(t *testing.T) {
			if err := s.RaiseAll(ctx, []string{"invoices"}, 20); err != nil {
				t.Fatal(err)
			}
			_, err := enqueueAll(ctx, s, 10, mail("inv/stale", 10))
			if !errors.Is(err, ErrStale) {
				t.Fatalf("enqueue with token 10 after a raise to 20: err %v, want ErrStale", err)
			}
			// A transaction of the current term queuing a message of the old one.
			_, err = enqueueAll(ctx, s, 20, mail("inv/mixed", 10))
			if !errors.Is(err, ErrStale) {
				t.Fatalf("enqueue of a token-10 message in a token-20 transaction: err %v, want ErrStale", err)
			}
			for _, m := range mustOutbox(t, ctx, s, "") {
				if m.Key == "inv/stale" || m.Key == "inv/mixed" {
					t.Fatalf("fenced-out message %q exists", m.Key)
				}
			}
		})
		t.Run("RollbackLeavesNothing", func(t *testing.T) {
			boom := errors.New("boom")
			err := s.Fenced(ctx, "invoices", 20, func(ctx context.Context, tx scheduler.Tx) error {
				if _, err := s.Enqueue(ctx, tx, mail("inv/rolled", 20)); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("err %v, want boom", err)
			}
			for _, m := range mustOutbox(t, ctx, s, "") {
				if m.Key == "inv/rolled" {
					t.Fatal("message of a rolled-back transaction exists")
				}
			}
		})
		t.Run("InvalidRefused", func(t *testing.T) {
			bad := []scheduler.Message{
				{Key: "has space", Job: "invoices", Token: 20, Kind: scheduler.MessageEmail, Destination: "a@b", ScheduledAt: outboxNow},
				{Key: "a:b", Job: "invoices", Token: 20, Kind: scheduler.MessageEmail, Destination: "a@b", ScheduledAt: outboxNow},
				{Key: "a..b", Job: "invoices", Token: 20, Kind: scheduler.MessageEmail, Destination: "a@b", ScheduledAt: outboxNow},
				{Key: ".a", Job: "invoices", Token: 20, Kind: scheduler.MessageEmail, Destination: "a@b", ScheduledAt: outboxNow},
				{Key: "a@b", Job: "invoices", Token: 20, Kind: scheduler.MessageEmail, Destination: "a@b", ScheduledAt: outboxNow},
				{Key: "k", Job: "invoices", Token: 20, Kind: "sms", Destination: "a@b", ScheduledAt: outboxNow},
				{Key: "k", Job: "invoices", Token: 20, Kind: scheduler.MessageEmail, ScheduledAt: outboxNow},
				{Key: "k", Job: "invoices", Token: 20, Kind: scheduler.MessageEmail, Destination: "a@b"},
			}
			for _, m := range bad {
				if _, err := enqueueAll(ctx, s, 20, m); err == nil {
					t.Errorf("enqueue of %+v succeeded", m)
				}
			}
		})
	})
}

// TestStore_ClaimOutbox: a claim marks due messages sending before they are sent; a new
// term's claim takes over the in-flight messages of the old one, after which the old term
// claims and records nothing; results are recorded under the claim's token only.
func TestStore_ClaimOutbox(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return outboxNow }}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
			t.Fatal(err)
		}
		var msgs []scheduler.Message
		for i := range 3 {
			msgs = append(msgs, mail(fmt.Sprintf("inv/%d", i), 10))
		}
		if _, err := enqueueAll(ctx, s, 10, msgs...); err != nil {
			t.Fatal(err)
		}

		if got, err := s.ClaimOutbox(ctx, 10, 10, outboxNow.Add(-time.Second)); err != nil || len(got) != 0 {
			t.Fatalf("claim before the messages are due: %d claimed (err %v), want 0", len(got), err)
		}
		got, err := s.ClaimOutbox(ctx, 10, 2, outboxNow)
		if err != nil || len(got) != 2 {
			t.Fatalf("claim of 2: %d claimed (err %v)", len(got), err)
		}
		for _, m := range got {
			if m.Status != scheduler.MessageSending || m.Attempts != 1 || m.ClaimToken != 10 {
				t.Fatalf("claimed message = %+v, want sending, attempt 1, claim token 10", m)
			}
		}
		if n := len(mustOutbox(t, ctx, s, scheduler.MessageSending)); n != 2 {
			t.Fatalf("%d messages sending, want 2", n)
		}
		if err := s.RecordDelivery(ctx, 10, got[0].Key, scheduler.Delivery{Outcome: scheduler.DeliveryOK, At: outboxNow}); err != nil {
			t.Fatal(err)
		}

		t.Run("NewTermTakesOverInFlight", func(t *testing.T) {
			// Term 11's claim: got[1] was left sending by term 10, inv/2 was pending.
			taken, err := s.ClaimOutbox(ctx, 11, 10, outboxNow)
			if err != nil || len(taken) != 2 {
				t.Fatalf("claim of term 11: %d claimed (err %v), want 2", len(taken), err)
			}
			for _, m := range taken {
				want := 1
				if m.Key == got[1].Key {
					want = 2
				}
				if m.ClaimToken != 11 || m.Attempts != want {
					t.Fatalf("message %q claimed by term 11: %+v, want claim token 11, attempts %d", m.Key, m, want)
				}
			}
		})
		t.Run("StaleTokenClaimsAndRecordsNothing", func(t *testing.T) {
			if err := s.RetryOutbox(ctx, "none"); !errors.Is(err, ErrNotDead) {
				t.Fatalf("retry of a missing message: err %v, want ErrNotDead", err)
			}
			before := mustOutbox(t, ctx, s, "")
			if _, err := s.ClaimOutbox(ctx, 10, 10, outboxNow.Add(time.Hour)); !errors.Is(err, ErrStale) {
				t.Fatalf("claim with token 10 after term 11 claimed: err %v, want ErrStale", err)
			}
			err := s.RecordDelivery(ctx, 10, got[1].Key, scheduler.Delivery{Outcome: scheduler.DeliveryOK, At: outboxNow})
			if !errors.Is(err, ErrStale) {
				t.Fatalf("record with token 10 after term 11 claimed: err %v, want ErrStale", err)
			}
			after := mustOutbox(t, ctx, s, "")
			for i := range before {
				if before[i] != after[i] {
					t.Fatalf("stale calls changed %+v into %+v", before[i], after[i])
				}
			}
		})
		t.Run("Outcomes", func(t *testing.T) {
			next := outboxNow.Add(time.Minute)
			if err := s.RecordDelivery(ctx, 11, "inv/1", scheduler.Delivery{Outcome: scheduler.DeliveryRetry, Error: "503", At: outboxNow, Next: next}); err != nil {
				t.Fatal(err)
			}
			if err := s.RecordDelivery(ctx, 11, "inv/2", scheduler.Delivery{Outcome: scheduler.DeliveryDead, Error: "550 no such user", At: outboxNow}); err != nil {
				t.Fatal(err)
			}
			err := s.RecordDelivery(ctx, 11, "inv/2", scheduler.Delivery{Outcome: scheduler.DeliveryOK, At: outboxNow})
			if !errors.Is(err, ErrNotClaimed) {
				t.Fatalf("record of a dead message: err %v, want ErrNotClaimed", err)
			}
			byKey := map[string]scheduler.Message{}
			for _, m := range mustOutbox(t, ctx, s, "") {
				byKey[m.Key] = m
			}
			if m := byKey["inv/0"]; m.Status != scheduler.MessageDelivered || !m.Delivered.Equal(outboxNow) {
				t.Errorf("delivered message = %+v", m)
			}
			if m := byKey["inv/1"]; m.Status != scheduler.MessagePending || !m.NextAttempt.Equal(next) || m.LastError != "503" {
				t.Errorf("retried message = %+v", m)
			}
			if m := byKey["inv/2"]; m.Status != scheduler.MessageDead || m.LastError != "550 no such user" {
				t.Errorf("dead message = %+v", m)
			}
			if claimed, err := s.ClaimOutbox(ctx, 11, 10, outboxNow); err != nil || len(claimed) != 0 {
				t.Fatalf("claim before the retry is due: %d claimed (err %v), want 0", len(claimed), err)
			}
			if claimed, err := s.ClaimOutbox(ctx, 11, 10, next); err != nil || len(claimed) != 1 || claimed[0].Attempts != 3 {
				t.Fatalf("claim when the retry is due: %+v (err %v), want inv/1 at attempt 3", claimed, err)
			}
		})
		t.Run("RetryDead", func(t *testing.T) {
			if err := s.RetryOutbox(ctx, "inv/0"); !errors.Is(err, ErrNotDead) {
				t.Fatalf("retry of a delivered message: err %v, want ErrNotDead", err)
			}
			if err := s.RetryOutbox(ctx, "inv/2"); err != nil {
				t.Fatal(err)
			}
			claimed, err := s.ClaimOutbox(ctx, 11, 10, outboxNow)
			if err != nil || len(claimed) != 1 || claimed[0].Key != "inv/2" || claimed[0].Attempts != 1 {
				t.Fatalf("claim after the retry: %+v (err %v), want inv/2 at attempt 1", claimed, err)
			}
		})
	})
}

// TestStore_ReleaseOutbox: the messages sending under a term's own token go back to pending,
// due as they were and their claim's attempt not counted; those of other terms and the other
// statuses are left alone, and a token older than the dispatcher's fence releases nothing.
func TestStore_ReleaseOutbox(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return outboxNow }}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := enqueueAll(ctx, s, 10, mail("inv/a", 10), mail("inv/b", 10), mail("inv/c", 10)); err != nil {
			t.Fatal(err)
		}
		older, err := s.ClaimOutbox(ctx, 10, 1, outboxNow)
		if err != nil || len(older) != 1 {
			t.Fatalf("claim of term 10: %d (err %v)", len(older), err)
		}
		own, err := s.ClaimOutbox(ctx, 11, 1, outboxNow) // hands inv/a back, claims it again
		if err != nil || len(own) != 1 {
			t.Fatalf("claim of term 11: %d (err %v)", len(own), err)
		}
		if err := s.RecordDelivery(ctx, 11, own[0].Key, scheduler.Delivery{Outcome: scheduler.DeliveryOK, At: outboxNow}); err != nil {
			t.Fatal(err)
		}
		mine, err := s.ClaimOutbox(ctx, 11, 1, outboxNow)
		if err != nil || len(mine) != 1 {
			t.Fatalf("second claim of term 11: %d (err %v)", len(mine), err)
		}
		if _, err := s.ReleaseOutbox(ctx, 9, outboxNow); !errors.Is(err, ErrStale) {
			t.Fatalf("release with a stale token: err %v, want ErrStale", err)
		}
		n, err := s.ReleaseOutbox(ctx, 11, outboxNow)
		if err != nil || n != 1 {
			t.Fatalf("release of term 11: %d (err %v), want 1", n, err)
		}
		for _, m := range mustOutbox(t, ctx, s, "") {
			switch {
			case m.Key == mine[0].Key && (m.Status != scheduler.MessagePending || m.Attempts != 0 || !m.NextAttempt.Equal(outboxNow)):
				t.Errorf("released message %+v, want pending, due as it was, no attempt counted", m)
			case m.Key == own[0].Key && m.Status != scheduler.MessageDelivered:
				t.Errorf("delivered message %+v released", m)
			}
		}
		if again, err := s.ClaimOutbox(ctx, 11, 10, outboxNow); err != nil || len(again) != 2 {
			t.Fatalf("claim after the release: %d (err %v), want the released message and the last one", len(again), err)
		}
	})
}

// TestStore_PruneOutbox: Prune deletes the delivered messages of the runs it deleted, and
// keeps undelivered messages and those of remaining runs.
func TestStore_PruneOutbox(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return outboxNow }}, func(t *testing.T, ctx context.Context, s *Store) {
		var slots []scheduler.SlotKey
		for h := 1; h <= 3; h++ {
			slots = append(slots, scheduler.SlotKey{Job: "invoices", At: outboxNow.Add(-time.Duration(h) * time.Hour)})
		}
		claimAndFinish(t, ctx, s, 5, slots, scheduler.StatusSucceeded)
		// Two messages per slot; the first of each is delivered.
		var msgs []scheduler.Message
		for h := 1; h <= 3; h++ {
			for i := range 2 {
				m := mail(fmt.Sprintf("inv/%d/%d", h, i), 5)
				m.ScheduledAt = outboxNow.Add(-time.Duration(h) * time.Hour)
				msgs = append(msgs, m)
			}
		}
		if _, err := enqueueAll(ctx, s, 5, msgs...); err != nil {
			t.Fatal(err)
		}
		claimed, err := s.ClaimOutbox(ctx, 5, 100, outboxNow)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range claimed {
			if m.Key[len(m.Key)-1] == '0' {
				if err := s.RecordDelivery(ctx, 5, m.Key, scheduler.Delivery{Outcome: scheduler.DeliveryOK, At: outboxNow}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Keep the newest run only: the runs of 2 and 3 hours ago go.
		if _, err := s.Prune(ctx, 5, scheduler.Retention{Job: "invoices", Keep: 1, Protect: outboxNow, Limit: 100}); err != nil {
			t.Fatal(err)
		}
		left := map[string]bool{}
		for _, m := range mustOutbox(t, ctx, s, "") {
			left[m.Key] = true
		}
		want := map[string]bool{"inv/1/0": true, "inv/1/1": true, "inv/2/1": true, "inv/3/1": true}
		if fmt.Sprint(left) != fmt.Sprint(want) {
			t.Fatalf("messages left after pruning: %v, want %v", left, want)
		}
	})
}

// TestSQLite_OutboxKeyCheck: the SQLite schema refuses the keys that Enqueue refuses, for
// scripts that write the file themselves.
func TestSQLite_OutboxKeyCheck(t *testing.T) {
	s := mustOpen(t, Config{Path: t.TempDir() + "/scheduler.db"})
	ctx := testCtx(t)
	insert := func(key string) error {
		_, err := s.b.(*sqlite.Backend).Writer().ExecContext(ctx, `INSERT INTO outbox (key, job, scheduled_at, token, kind,
			destination, next_attempt_at, created_at, updated_at) VALUES ($1, 'invoices', 1, 1, 'email', 'a@b', 1, 1, 1)`, key)
		return err
	}
	for _, key := range []string{"a:b", "a..b", ".a", "a.", "a b", "a@b", ""} {
		if err := insert(key); err == nil {
			t.Errorf("insert with key %q: no error", key)
		}
	}
	if err := insert("invoices/2026-03/client-1.v2"); err != nil {
		t.Fatalf("insert with a valid key: %v", err)
	}
}

// TestStore_OutboxReads: a slot's messages, for the history of its run, and the outbox's
// summary, for metrics.
func TestStore_OutboxReads(t *testing.T) {
	eachStore(t, Config{Now: func() time.Time { return outboxNow }}, func(t *testing.T, ctx context.Context, s *Store) {
		if st, err := s.OutboxStats(ctx); err != nil || st != (OutboxStats{}) {
			t.Fatalf("stats of an empty outbox = %+v, %v", st, err)
		}
		if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
			t.Fatal(err)
		}
		other := mail("inv/other", 10)
		other.ScheduledAt = outboxNow.Add(-time.Hour)
		manual := mail("inv/manual", 10)
		manual.Manual = true
		if _, err := enqueueAll(ctx, s, 10, mail("inv/1", 10), mail("inv/2", 10), other, manual); err != nil {
			t.Fatal(err)
		}
		msgs, err := s.SlotMessages(ctx, "invoices", outboxNow, false)
		if err != nil || len(msgs) != 2 || msgs[0].Key != "inv/1" || msgs[1].Key != "inv/2" {
			t.Fatalf("messages of the slot = %+v (err %v), want inv/1 and inv/2", msgs, err)
		}
		if msgs, err := s.SlotMessages(ctx, "invoices", outboxNow, true); err != nil || len(msgs) != 1 || msgs[0].Key != "inv/manual" {
			t.Fatalf("messages of the manual run = %+v (err %v), want inv/manual", msgs, err)
		}
		claimed, err := s.ClaimOutbox(ctx, 10, 1, outboxNow)
		if err != nil || len(claimed) != 1 {
			t.Fatal(err)
		}
		if err := s.RecordDelivery(ctx, 10, claimed[0].Key, scheduler.Delivery{Outcome: scheduler.DeliveryDead, At: outboxNow}); err != nil {
			t.Fatal(err)
		}
		st, err := s.OutboxStats(ctx)
		if err != nil || st.Pending != 3 || st.Dead != 1 || !st.OldestPending.Equal(outboxNow) {
			t.Fatalf("stats = %+v (err %v), want 3 pending since %s and 1 dead", st, err, outboxNow)
		}
	})
}
