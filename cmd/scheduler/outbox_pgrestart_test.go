package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/outbox"
	"scheduler/internal/testenv"
)

// pausingDeliverer sends through next and, once the receiver accepted a message, reports it on
// accepted and waits for resume before returning: the test acts on the store in between, while
// the result is about to be recorded.
type pausingDeliverer struct {
	next     outbox.Deliverer
	pause    atomic.Bool
	accepted chan struct{}
	resume   chan struct{}
}

func (p *pausingDeliverer) Deliver(ctx context.Context, m scheduler.Message, token int64) error {
	err := p.next.Deliver(ctx, m, token)
	if err == nil && p.pause.CompareAndSwap(true, false) {
		p.accepted <- struct{}{}
		<-p.resume
	}
	return err
}

// lostReplyStore records through the real store, and the first time a record commits it
// reports the record lost, as when the server stops between a commit and its reply: it tells
// the test on lost and waits for resume, so that the test stops the server first.
type lostReplyStore struct {
	*fence.Store
	lose   atomic.Bool
	lost   chan struct{}
	resume chan struct{}
}

func (l *lostReplyStore) RecordDelivery(ctx context.Context, token int64, key string, d scheduler.Delivery) error {
	err := l.Store.RecordDelivery(ctx, token, key, d)
	if err == nil && l.lose.CompareAndSwap(true, false) {
		l.lost <- struct{}{}
		<-l.resume
		return errors.New("unexpected EOF: the reply of the commit was lost")
	}
	return err
}

// lostClaimStore claims through the real store, and the first time a claim commits with
// messages in it, it reports the claim failed, as when the connection breaks between a commit
// and its reply.
type lostClaimStore struct {
	*fence.Store
	lose atomic.Bool
}

func (l *lostClaimStore) ClaimOutbox(ctx context.Context, token int64, limit int, now time.Time) ([]scheduler.Message, error) {
	msgs, err := l.Store.ClaimOutbox(ctx, token, limit, now)
	if err == nil && len(msgs) > 0 && l.lose.CompareAndSwap(true, false) {
		return nil, errors.New("unexpected EOF: the reply of the commit was lost")
	}
	return msgs, err
}

// restartCase is a store on its own Postgres server, a real SMTP receiver and a dispatcher.
type restartCase struct {
	pg    *testenv.Postgres
	store *fence.Store
	smtp  *testenv.SMTPServer
	dl    *pausingDeliverer
	logs  *observer.ObservedLogs
	// Store is what the dispatcher uses: store itself unless a test wraps it.
	Store outbox.Store

	mu       sync.Mutex
	observed map[string][]scheduler.DeliveryOutcome
}

// observe is the dispatcher's Observe: the outcomes counted, by key.
func (rc *restartCase) observe(m scheduler.Message, d scheduler.Delivery) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.observed[m.Key] = append(rc.observed[m.Key], d.Outcome)
}

// counted returns the outcomes counted for key.
func (rc *restartCase) counted(key string) []scheduler.DeliveryOutcome {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]scheduler.DeliveryOutcome(nil), rc.observed[key]...)
}

func newRestartCase(t *testing.T, ctx context.Context) *restartCase {
	t.Helper()
	pg := testenv.MustPostgres(t)
	store := migratedStore(ctx, t, fence.Config{DSN: pg.CreateDatabase(t)})
	if err := store.RaiseAll(ctx, []string{"invoices"}, 3); err != nil {
		t.Fatal(err)
	}
	srv := testenv.MustSMTP(t, testenv.SMTPOptions{})
	sd, err := outbox.NewSMTP(outbox.SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: outbox.NoTLS, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rc := &restartCase{pg: pg, store: store, smtp: srv, Store: store, observed: map[string][]scheduler.DeliveryOutcome{},
		dl: &pausingDeliverer{next: sd, accepted: make(chan struct{}), resume: make(chan struct{})}}
	return rc
}

// enqueue queues the invoice e-mail key with token 3.
func (rc *restartCase) enqueue(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	a := scheduler.Attempt{Job: "invoices", Slot: time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC), Token: 3, Fencer: rc.store}
	if err := a.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
		_, err := a.Enqueue(ctx, tx, scheduler.Message{Key: key, Kind: scheduler.MessageEmail,
			Destination: "client-1@example.test", Subject: "Invoice 2026-03", Body: "Amount due: 101.00"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// run starts a dispatcher term with token; the returned func ends it and returns Run's error.
func (rc *restartCase) run(t *testing.T, token int64) (end func() error) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	rc.logs = logs
	d, err := outbox.New(outbox.Config{Store: rc.Store, Observe: rc.observe, Deliverers: map[scheduler.MessageKind]outbox.Deliverer{scheduler.MessageEmail: rc.dl},
		Poll: 50 * time.Millisecond, RecordTimeout: 300 * time.Millisecond, Logger: zap.New(core),
		Fenced: func(err error) bool { return errors.Is(err, scheduler.ErrFenced) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, token) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(60 * time.Second):
			t.Fatal("Run did not return after the term ended")
			return nil
		}
	}
}

// acceptedThenStoreStops queues key and starts a term with token 4, whose delivery of it the
// receiver accepts; Postgres then stops before that delivery is recorded. It returns the term's
// end.
func (rc *restartCase) acceptedThenStoreStops(t *testing.T, ctx context.Context, key string) (end func() error) {
	t.Helper()
	rc.enqueue(t, ctx, key)
	rc.dl.pause.Store(true)
	end = rc.run(t, 4)
	<-rc.dl.accepted
	rc.stopStoreThenResume(t, rc.dl.resume)
	return end
}

// stopStoreThenResume stops Postgres, lets the held delivery go on by closing resume, and waits
// until its record has failed.
func (rc *restartCase) stopStoreThenResume(t *testing.T, resume chan struct{}) {
	t.Helper()
	rc.pg.Stop(t)
	close(resume)
	testenv.Eventually(t, 30*time.Second, 10*time.Millisecond, "the record failing while the store is away", func() bool {
		return rc.logs.FilterMessage("outbox record failed").Len() > 0
	})
}

// status is the status of message key.
func (rc *restartCase) status(ctx context.Context, key string) scheduler.MessageStatus {
	msgs, err := rc.store.Outbox(ctx, "", 100)
	if err != nil {
		return ""
	}
	for _, m := range msgs {
		if m.Key == key {
			return m.Status
		}
	}
	return ""
}

// TestDispatcher_PostgresRestart: Postgres stops after the receiver accepted a message and
// before its delivery is recorded. Within the term, the record is made once the server is back,
// the message is sent once, and the dispatcher delivers what is queued afterwards. When the
// term ends while the server is away, the next term sends the message again: once, the
// documented window, and records it.
func TestDispatcher_PostgresRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	t.Run("RecordedWhenTheStoreIsBack", func(t *testing.T) {
		rc := newRestartCase(t, ctx)
		end := rc.acceptedThenStoreStops(t, ctx, "invoice.restart.1")
		rc.pg.Start(t)
		testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, "the message recorded delivered", func() bool {
			return rc.status(ctx, "invoice.restart.1") == scheduler.MessageDelivered
		})
		rc.enqueue(t, ctx, "invoice.restart.2")
		testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, "a message queued after the restart delivered", func() bool {
			return rc.status(ctx, "invoice.restart.2") == scheduler.MessageDelivered
		})
		if err := end(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		ids := rc.smtp.MessageIDs()
		if len(ids) != 2 || ids["<invoice.restart.1@example.test>"] != 1 || ids["<invoice.restart.2@example.test>"] != 1 {
			t.Fatalf("the receiver got %v, want each message once", ids)
		}
		// The late record is counted, once, as the metrics count deliveries.
		if got := rc.counted("invoice.restart.1"); len(got) != 1 || got[0] != scheduler.DeliveryOK {
			t.Fatalf("outcomes counted for the message = %v, want one delivered", got)
		}
	})

	t.Run("ReplyOfTheRecordLost", func(t *testing.T) {
		rc := newRestartCase(t, ctx)
		ls := &lostReplyStore{Store: rc.store, lost: make(chan struct{}), resume: make(chan struct{})}
		ls.lose.Store(true)
		rc.Store = ls
		rc.enqueue(t, ctx, "invoice.restart.4")
		end := rc.run(t, 4)
		<-ls.lost
		rc.stopStoreThenResume(t, ls.resume)
		rc.pg.Start(t)
		testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, "the repeated record accepted and counted", func() bool {
			return len(rc.counted("invoice.restart.4")) > 0
		})
		if err := end(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got := rc.counted("invoice.restart.4"); len(got) != 1 || got[0] != scheduler.DeliveryOK {
			t.Fatalf("outcomes counted = %v, want one delivered", got)
		}
		if s := rc.status(ctx, "invoice.restart.4"); s != scheduler.MessageDelivered {
			t.Fatalf("status = %s, want delivered", s)
		}
		if ids := rc.smtp.MessageIDs(); len(ids) != 1 || ids["<invoice.restart.4@example.test>"] != 1 {
			t.Fatalf("the receiver got %v, want the message once", ids)
		}
	})

	// The claim commits but its answer is lost: the message is sending under the term's token,
	// which nothing of the term sends. It is handed back and sent in the same term, once, its
	// lost claim's attempt not counted.
	t.Run("ReplyOfTheClaimLost", func(t *testing.T) {
		rc := newRestartCase(t, ctx)
		lc := &lostClaimStore{Store: rc.store}
		lc.lose.Store(true)
		rc.Store = lc
		rc.enqueue(t, ctx, "invoice.restart.5")
		end := rc.run(t, 4)
		testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, "the message delivered in the same term", func() bool {
			return rc.status(ctx, "invoice.restart.5") == scheduler.MessageDelivered
		})
		if err := end(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if ids := rc.smtp.MessageIDs(); len(ids) != 1 || ids["<invoice.restart.5@example.test>"] != 1 {
			t.Fatalf("the receiver got %v, want the message once", ids)
		}
		msgs, err := rc.store.Outbox(ctx, scheduler.MessageDelivered, 10)
		if err != nil || len(msgs) != 1 || msgs[0].Attempts != 1 {
			t.Fatalf("delivered messages %+v (err %v), want the message at attempt 1", msgs, err)
		}
		if n := rc.logs.FilterMessageSnippet("answer was lost").Len(); n != 1 {
			t.Errorf("%d lines about the lost claim, want 1", n)
		}
	})

	t.Run("NextTermSendsAgainOnce", func(t *testing.T) {
		rc := newRestartCase(t, ctx)
		end := rc.acceptedThenStoreStops(t, ctx, "invoice.restart.3")
		if err := end(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		rc.pg.Start(t)
		end = rc.run(t, 5)
		testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, "the next term delivers the message", func() bool {
			return rc.status(ctx, "invoice.restart.3") == scheduler.MessageDelivered
		})
		if err := end(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if ids := rc.smtp.MessageIDs(); len(ids) != 1 || ids["<invoice.restart.3@example.test>"] != 2 {
			t.Fatalf("the receiver got %v, want the message twice: once per term", ids)
		}
	})
}
