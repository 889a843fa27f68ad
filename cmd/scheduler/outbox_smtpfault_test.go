package main

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/fence"
	"scheduler/internal/testenv"
	"scheduler/internal/testenv/smtpfault"
)

// TestDispatcher_SMTPSessionBreaksAfterAcceptance: the daemon's dispatcher, on Postgres, sends
// an e-mail to a server that accepts it (250 to the end of DATA) and then drops the
// connection at QUIT: the message is recorded delivered after one attempt and the server has
// it once. Before, the failed QUIT made the attempt a failure, and the message went again at
// every attempt until it was dead, each time accepted.
func TestDispatcher_SMTPSessionBreaksAfterAcceptance(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := migratedStore(ctx, t, fence.Config{DSN: testenv.MustDatabase(t)})
	if err := store.RaiseAll(ctx, []string{"invoices"}, 3); err != nil {
		t.Fatal(err)
	}
	a := scheduler.Attempt{Job: "invoices", Slot: time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC), Token: 3, Fencer: store}
	if err := a.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
		_, err := a.Enqueue(ctx, tx, scheduler.Message{Key: "invoice.1", Kind: scheduler.MessageEmail,
			Destination: "client-1@example.test", Subject: "Invoice 2026-03", Body: "Amount due: 101.00"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := smtpfault.Start(t, smtpfault.Options{Fault: smtpfault.DropAtQuit})
	d, err := newDispatcher(config.OutboxConfig{SMTP: config.OutboxSMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: "none"},
		MaxAttempts: 3, RetryBackoff: 10 * time.Millisecond, Batch: 10}, store, zaptest.NewLogger(t), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tctx, endTerm := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(tctx, 3) }()
	var m scheduler.Message
	testenv.Eventually(t, 30*time.Second, 10*time.Millisecond, "the e-mail delivered or dead", func() bool {
		msgs, err := store.Outbox(ctx, "", 10)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("outbox = %v (%v), want the one e-mail", msgs, err)
		}
		m = msgs[0]
		return m.Status == scheduler.MessageDelivered || m.Status == scheduler.MessageDead
	})
	endTerm()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if m.Status != scheduler.MessageDelivered || m.Attempts != 1 {
		t.Fatalf("message %s after %d attempts (%s), want delivered after 1", m.Status, m.Attempts, m.LastError)
	}
	if got := srv.Accepted(); len(got) != 1 {
		t.Fatalf("server accepted %q, want the e-mail once", got)
	}
}
