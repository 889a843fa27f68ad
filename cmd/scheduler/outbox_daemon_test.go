package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"scheduler"
	"scheduler/internal/testenv"
)

// forEachDaemonStore runs test on a cluster of Postgres and on one of SQLite, configured with
// extra.
func forEachDaemonStore(t *testing.T, extra string, test func(t *testing.T, c *cluster)) {
	t.Run("Postgres", func(t *testing.T) { test(t, newCluster(t, testenv.MustDatabase(t), extra)) })
	t.Run("SQLite", func(t *testing.T) { test(t, newCluster(t, "", extra)) })
}

// queueEmails queues n e-mails of job yearly's slot in one transaction fenced with token.
func queueEmails(ctx context.Context, t *testing.T, d *daemon, token int64, n int) {
	t.Helper()
	if err := d.store.RaiseAll(ctx, []string{"yearly"}, token); err != nil {
		t.Fatal(err)
	}
	a := scheduler.Attempt{Job: "yearly", Slot: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Token: token, Fencer: d.store}
	if err := a.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
		for i := 1; i <= n; i++ {
			if _, err := a.Enqueue(ctx, tx, scheduler.Message{Key: fmt.Sprintf("yearly.%d", i), Kind: scheduler.MessageEmail,
				Destination: fmt.Sprintf("client-%d@example.test", i), Subject: "Hello", Body: "Happy new year"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// gauge returns the value of the metric name with labels (name=value pairs) in d's registry.
func metricValue(t *testing.T, d *daemon, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := d.m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, labels) {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return 0
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
		}
		if !found {
			return false
		}
	}
	return true
}

// TestDaemon_LeadDispatchesOutbox: a leader's term delivers the committed messages over SMTP,
// once each, and counts them; the dispatcher is joined before the term ends.
func TestDaemon_LeadDispatchesOutbox(t *testing.T) {
	smtp := testenv.MustSMTP(t, testenv.SMTPOptions{})
	extra := fmt.Sprintf("outbox: {smtp: {addr: %q, from: billing@example.test, tls: none}}\n", smtp.Addr)
	forEachDaemonStore(t, extra, func(t *testing.T, c *cluster) {
		d := buildDaemon(t, c)
		defer runWatcher(t, d)()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const token = 5
		before := len(smtp.Messages())
		// Queued by the term before: no fence holds a term's own token before it begins.
		queueEmails(ctx, t, d, token-1, 3)
		if v := metricValue(t, d, "scheduler_outbox_pending"); v != 3 {
			t.Fatalf("scheduler_outbox_pending = %v, want 3", v)
		}
		if v := metricValue(t, d, "scheduler_outbox_oldest_pending_seconds"); v < 0 {
			t.Fatalf("scheduler_outbox_oldest_pending_seconds = %v, want >= 0", v)
		}
		termCtx, endTerm := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.lead(termCtx, scheduler.Term{Token: token, Node: "a", Since: time.Now()}) }()
		testenv.Eventually(t, 20*time.Second, 20*time.Millisecond, "3 e-mails delivered and counted", func() bool {
			return len(smtp.Messages())-before >= 3 &&
				metricValue(t, d, "scheduler_outbox_deliveries_total", "kind", "email", "result", "delivered") == 3
		})
		endTerm()
		if err := <-done; err != nil {
			t.Fatalf("lead = %v, want nil", err)
		}
		if got := len(smtp.Messages()) - before; got != 3 {
			t.Fatalf("%d e-mails received, want 3", got)
		}
		if v := metricValue(t, d, "scheduler_outbox_pending"); v != 0 {
			t.Fatalf("scheduler_outbox_pending = %v after delivery, want 0", v)
		}
		if v := metricValue(t, d, "scheduler_outbox_oldest_pending_seconds"); v != 0 {
			t.Fatalf("scheduler_outbox_oldest_pending_seconds = %v with nothing pending, want 0", v)
		}
	})
}

// TestDaemon_LeadEndsWhenOutboxFenced: a newer dispatcher's claim ends the older term, the
// runner's work included, although no job's fence has moved.
func TestDaemon_LeadEndsWhenOutboxFenced(t *testing.T) {
	forEachDaemonStore(t, "outbox: {log: true}\n", func(t *testing.T, c *cluster) {
		d := buildDaemon(t, c)
		defer runWatcher(t, d)()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const token = 5
		if _, err := d.store.ClaimOutbox(ctx, token+1000, 1, time.Now()); err != nil {
			t.Fatal(err)
		}
		wantLeadFenced(ctx, t, d, token, "the outbox", "(*Dispatcher).Run", "its dispatcher")
	})
}
