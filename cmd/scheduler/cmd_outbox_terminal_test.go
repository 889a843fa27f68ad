package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"scheduler"
)

// TestOutboxCmd_TerminalEscapes: a message's destination is a job's choice and its last error a
// receiver's words; the table `outbox` prints shows their control characters as escapes.
func TestOutboxCmd_TerminalEscapes(t *testing.T) {
	c := newCluster(t, "", "")
	d := buildDaemon(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const token = 5
	if err := d.store.RaiseAll(ctx, []string{"yearly"}, token); err != nil {
		t.Fatal(err)
	}
	a := scheduler.Attempt{Job: "yearly", Slot: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Token: token, Fencer: d.store}
	if err := a.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
		_, err := a.Enqueue(ctx, tx, scheduler.Message{Key: "yearly.1", Kind: scheduler.MessageWebhook,
			Destination: "https://example.test/\x1b]0;owned\x07", Subject: "s", Body: "b"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	claimed, err := d.store.ClaimOutbox(ctx, token, 1, time.Now())
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %v, %v", claimed, err)
	}
	if err := d.store.RecordDelivery(ctx, token, "yearly.1", scheduler.Delivery{Outcome: scheduler.DeliveryDead,
		Error: "500 \x1b[2J", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	d.store.Close()

	out := c.cli("outbox", "--status", "dead")
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("outbox prints %q: control characters reach the terminal", out)
	}
	for _, want := range []string{`https://example.test/\x1b]0;owned\x07`, `500 \x1b[2J`} {
		if !strings.Contains(out, want) {
			t.Fatalf("outbox prints %q, want %q in it", out, want)
		}
	}
}
