package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/fence"
	"scheduler/internal/testenv"
)

// TestNewDispatcher_Log: with outbox.log and no SMTP server the e-mails are delivered to the
// log, as `make run` shows the sample invoices' e-mails; an SMTP address the deliverer cannot
// use is refused naming its key.
func TestNewDispatcher_Log(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := migratedStore(ctx, t, fence.Config{Path: filepath.Join(t.TempDir(), "scheduler.db")})
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
	core, logs := observer.New(zap.InfoLevel)
	d, err := newDispatcher(config.OutboxConfig{Log: true, MaxAttempts: 10, RetryBackoff: time.Second, Batch: 100}, store, zap.New(core), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tctx, endTerm := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(tctx, 3) }()
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, "the e-mail logged", func() bool {
		return logs.FilterMessage("message logged").FilterField(zap.String("destination", "client-1@example.test")).Len() == 1
	})
	endTerm()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if msgs, err := store.Outbox(ctx, scheduler.MessageDelivered, 10); err != nil || len(msgs) != 1 {
		t.Fatalf("delivered = %v (%v), want the e-mail", msgs, err)
	}

	_, err = newDispatcher(config.OutboxConfig{SMTP: config.OutboxSMTPConfig{Addr: "mail:0", From: "b@example.test"}, MaxAttempts: 1,
		RetryBackoff: time.Second, Batch: 1}, store, zap.NewNop(), nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "outbox.smtp") {
		t.Fatalf("newDispatcher with port 0: err = %v, want it to name outbox.smtp", err)
	}
}
