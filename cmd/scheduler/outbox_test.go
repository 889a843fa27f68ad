package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/outbox"
	"scheduler/internal/testenv"
)

// The store is the dispatcher's outbox as it is.
var _ outbox.Store = (*fence.Store)(nil)

// outboxTimeout bounds each test of this file.
const outboxTimeout = 2 * time.Minute

// outboxRig is a real store with a real SMTP server and a real HTTP receiver.
type outboxRig struct {
	t     *testing.T
	ctx   context.Context
	store *fence.Store
	smtp  *testenv.SMTPServer
	http  *httptest.Server

	mu     sync.Mutex
	hooks  map[string]int      // requests by Idempotency-Key
	tokens map[string][]string // Fencing-Tokens by Idempotency-Key, in order
	// reply chooses the HTTP status for the n-th request (from 1) of a key.
	reply func(key string, n int) int
	// hold, if set, is called before the reply, outside mu: it may block.
	hold func(key string, n int)
}

// migratedStore opens the store of cfg, migrated, until the test ends.
func migratedStore(ctx context.Context, t *testing.T, cfg fence.Config) *fence.Store {
	t.Helper()
	s, err := fence.Open(ctx, cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// forEachOutboxStore runs test against a fresh Postgres database and a fresh SQLite store.
func forEachOutboxStore(t *testing.T, test func(t *testing.T, r *outboxRig)) {
	for name, cfg := range map[string]func(t *testing.T) fence.Config{
		"Postgres": func(t *testing.T) fence.Config { return fence.Config{DSN: testenv.MustDatabase(t)} },
		"SQLite": func(t *testing.T) fence.Config {
			return fence.Config{Path: filepath.Join(t.TempDir(), "scheduler.db")}
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), outboxTimeout)
			t.Cleanup(cancel)
			s := migratedStore(ctx, t, cfg(t))
			r := &outboxRig{t: t, ctx: ctx, store: s, hooks: map[string]int{}, tokens: map[string][]string{},
				reply: func(string, int) int { return http.StatusOK }}
			r.smtp = testenv.MustSMTP(t, testenv.SMTPOptions{Refuse: func(rcpt string) (int, string) {
				if strings.HasPrefix(rcpt, "gone") {
					return 550, "no such user"
				}
				return 0, ""
			}})
			r.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				_, _ = io.Copy(io.Discard, req.Body)
				key := req.Header.Get("Idempotency-Key")
				r.mu.Lock()
				r.hooks[key]++
				n := r.hooks[key]
				r.tokens[key] = append(r.tokens[key], req.Header.Get("Fencing-Token"))
				hold := r.hold
				r.mu.Unlock()
				if hold != nil {
					hold(key, n)
				}
				r.mu.Lock()
				code := r.reply(key, n)
				r.mu.Unlock()
				w.WriteHeader(code)
			}))
			t.Cleanup(r.http.Close)
			if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
				t.Fatal(err)
			}
			test(t, r)
		})
	}
}

// enqueue queues e-mails to rcpts and webhooks with keys in one transaction of the invoices
// job fenced with token.
func (r *outboxRig) enqueue(token int64, emails map[string]string, hooks ...string) error {
	slot := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	return r.store.Fenced(r.ctx, "invoices", token, func(ctx context.Context, tx scheduler.Tx) error {
		var msgs []scheduler.Message
		for key, rcpt := range emails {
			msgs = append(msgs, scheduler.Message{Key: key, Kind: scheduler.MessageEmail, Destination: rcpt,
				Subject: "Invoice", Body: "Amount due: 10"})
		}
		for _, key := range hooks {
			msgs = append(msgs, scheduler.Message{Key: key, Kind: scheduler.MessageWebhook,
				Destination: r.http.URL + "/invoices", Body: `{"client":1}`})
		}
		for _, m := range msgs {
			m.Job, m.ScheduledAt, m.Token = "invoices", slot, token
			if _, err := r.store.Enqueue(r.ctx, tx, m); err != nil {
				return err
			}
		}
		return nil
	})
}

// dispatch runs a dispatcher with token until the test ends. stop ends it and returns Run's
// error; ended is closed when Run has returned by itself or through stop.
func (r *outboxRig) dispatch(token int64, maxAttempts int) (stop func() error, ended <-chan struct{}) {
	d, err := outbox.New(outbox.Config{Store: r.store, Batch: 7, Concurrency: 4, MaxAttempts: maxAttempts,
		RetryBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Poll: 5 * time.Millisecond,
		Fenced:     func(err error) bool { return errors.Is(err, fence.ErrStale) },
		Deliverers: r.deliverers(10 * time.Second),
		Logger:     zaptest.NewLogger(r.t)})
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	var res error
	go func() {
		defer close(done)
		res = d.Run(ctx, token)
	}()
	stop = func() error {
		cancel()
		<-done
		return res
	}
	r.t.Cleanup(func() { _ = stop() })
	return stop, done
}

// deliverers returns SMTP to the rig's server and webhooks to its receiver, which give up
// after hookTimeout.
func (r *outboxRig) deliverers(hookTimeout time.Duration) map[scheduler.MessageKind]outbox.Deliverer {
	smtpD, err := outbox.NewSMTP(outbox.SMTPConfig{Addr: r.smtp.Addr, From: "billing@example.test", TLS: outbox.NoTLS})
	if err != nil {
		r.t.Fatal(err)
	}
	hookD, err := outbox.NewWebhook(outbox.WebhookConfig{Hosts: []string{"127.0.0.1"}, Timeout: hookTimeout})
	if err != nil {
		r.t.Fatal(err)
	}
	return map[scheduler.MessageKind]outbox.Deliverer{scheduler.MessageEmail: smtpD, scheduler.MessageWebhook: hookD}
}

// messages returns the outbox by key.
func (r *outboxRig) messages() map[string]scheduler.Message {
	r.t.Helper()
	ms, err := r.store.Outbox(r.ctx, "", 10000)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]scheduler.Message{}
	for _, m := range ms {
		out[m.Key] = m
	}
	return out
}

// settled waits until no message is pending or sending.
func (r *outboxRig) settled() map[string]scheduler.Message {
	r.t.Helper()
	testenv.Eventually(r.t, outboxTimeout/2, 5*time.Millisecond, "every message delivered or dead", func() bool {
		for _, m := range r.messages() {
			if m.Status == scheduler.MessagePending || m.Status == scheduler.MessageSending {
				return false
			}
		}
		return true
	})
	return r.messages()
}

func (r *outboxRig) hookCount(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hooks[key]
}

// TestOutbox_Dispatch runs the dispatcher against the real stores, a real SMTP server and a
// real HTTP receiver.
func TestOutbox_Dispatch(t *testing.T) {
	forEachOutboxStore(t, func(t *testing.T, r *outboxRig) {
		t.Run("EveryCommittedMessageOnce", func(t *testing.T) {
			emails := map[string]string{}
			for i := range 30 {
				emails[fmt.Sprintf("invoices/2026-03/client-%d", i)] = fmt.Sprintf("client-%d@example.test", i)
			}
			if err := r.enqueue(10, emails, "hook/1", "hook/2"); err != nil {
				t.Fatal(err)
			}
			if err := r.enqueue(10, emails); err != nil { // a redo of the slot
				t.Fatal(err)
			}
			if err := r.enqueue(9, map[string]string{"fenced/1": "client-99@example.test"}); !errors.Is(err, fence.ErrStale) {
				t.Fatalf("enqueue with a stale token: err %v, want ErrStale", err)
			}
			stop, _ := r.dispatch(10, 5)
			got := r.settled()
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			ids := r.smtp.MessageIDs()
			for key := range emails {
				if n := ids["<"+key+"@example.test>"]; n != 1 || got[key].Status != scheduler.MessageDelivered {
					t.Errorf("message %s: received %d times, status %s; want once, delivered", key, n, got[key].Status)
				}
			}
			if len(ids) != len(emails) {
				t.Errorf("SMTP server received %d distinct Message-IDs, want %d", len(ids), len(emails))
			}
			for _, key := range []string{"hook/1", "hook/2"} {
				if n := r.hookCount(key); n != 1 || got[key].Status != scheduler.MessageDelivered {
					t.Errorf("webhook %s: received %d times, status %s; want once, delivered", key, n, got[key].Status)
				}
			}
			if _, ok := got["fenced/1"]; ok {
				t.Error("the fenced-out transaction's message exists")
			}
		})
		t.Run("RetriesAndDead", func(t *testing.T) {
			r.mu.Lock()
			r.reply = func(key string, n int) int {
				switch {
				case key == "retry/503" && n == 1:
					return http.StatusServiceUnavailable
				case key == "dead/400":
					return http.StatusBadRequest
				case key == "dead/500":
					return http.StatusInternalServerError
				}
				return http.StatusOK
			}
			r.mu.Unlock()
			if err := r.enqueue(10, map[string]string{"dead/550": "gone@example.test"}, "retry/503", "dead/400", "dead/500"); err != nil {
				t.Fatal(err)
			}
			stop, _ := r.dispatch(10, 3)
			got := r.settled()
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				key      string
				status   scheduler.MessageStatus
				attempts int
				requests int
				errText  string
			}{
				{"retry/503", scheduler.MessageDelivered, 2, 2, "503"},
				{"dead/400", scheduler.MessageDead, 1, 1, "400"},
				{"dead/500", scheduler.MessageDead, 3, 3, "3 attempts"},
				{"dead/550", scheduler.MessageDead, 1, 0, "550"},
			} {
				m := got[c.key]
				if m.Status != c.status || m.Attempts != c.attempts || (c.status == scheduler.MessageDead && !strings.Contains(m.LastError, c.errText)) {
					t.Errorf("message %s = status %s, attempts %d, error %q; want %s, %d, an error with %q",
						c.key, m.Status, m.Attempts, m.LastError, c.status, c.attempts, c.errText)
				}
				if c.requests > 0 && r.hookCount(c.key) != c.requests {
					t.Errorf("webhook %s: %d requests, want %d", c.key, r.hookCount(c.key), c.requests)
				}
			}
			if ids := r.smtp.MessageIDs(); ids["<dead/550@example.test>"] != 0 {
				t.Error("the refused e-mail was received")
			}
		})
		t.Run("NewTermTakesOverInFlight", func(t *testing.T) {
			// Term 10 claims and stops before sending (a kill -9 between the claim and the sends).
			if err := r.enqueue(10, map[string]string{"inflight/1": "client-1@example.test", "inflight/2": "client-2@example.test"}); err != nil {
				t.Fatal(err)
			}
			claimed, err := r.store.ClaimOutbox(r.ctx, 10, 100, time.Now())
			if err != nil || len(claimed) != 2 {
				t.Fatalf("term 10 claimed %d (err %v), want 2", len(claimed), err)
			}
			if err := r.store.RaiseAll(r.ctx, []string{"invoices"}, 11); err != nil {
				t.Fatal(err)
			}
			stop, _ := r.dispatch(11, 5)
			got := r.settled()
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			ids := r.smtp.MessageIDs()
			for _, key := range []string{"inflight/1", "inflight/2"} {
				if m := got[key]; m.Status != scheduler.MessageDelivered || m.Attempts != 2 || m.ClaimToken != 11 || ids["<"+key+"@example.test>"] != 1 {
					t.Errorf("message %s = %+v, received %d times; want delivered once by term 11 at attempt 2", key, m, ids["<"+key+"@example.test>"])
				}
			}
		})
		t.Run("StaleTermDeliversNothingMore", func(t *testing.T) {
			// Term 11's dispatcher is deposed: term 12 raises the dispatcher's fence (its first
			// claim), and messages queued after that are not term 11's to deliver.
			stopOld, ended := r.dispatch(11, 5)
			if _, err := r.store.ClaimOutbox(r.ctx, 12, 1, time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := r.store.RaiseAll(r.ctx, []string{"invoices"}, 12); err != nil {
				t.Fatal(err)
			}
			before := len(r.smtp.Messages())
			if err := r.enqueue(12, map[string]string{"late/1": "client-1@example.test"}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ended:
			case <-r.ctx.Done():
				t.Fatal("the stale dispatcher did not stop")
			}
			if err := stopOld(); !errors.Is(err, outbox.ErrFenced) {
				t.Fatalf("stale dispatcher's Run = %v, want ErrFenced", err)
			}
			if m := r.messages()["late/1"]; m.Status != scheduler.MessagePending || m.Attempts != 0 {
				t.Fatalf("message queued after the raise = %+v, want pending, never attempted", m)
			}
			if n := len(r.smtp.Messages()); n != before {
				t.Fatalf("SMTP server received %d messages after the raise, want 0", n-before)
			}
		})
		t.Run("RepeatOnlyAfterAcceptanceBeforeRecord", func(t *testing.T) {
			// Term 13 is deposed while the receiver holds its request: the receiver accepts it
			// after term 14 took over, term 13's record is refused, and term 14 sends the
			// message again with its own token: the one repeat the guarantee allows, which the
			// receiver can drop by key.
			if err := r.store.RaiseAll(r.ctx, []string{"invoices"}, 13); err != nil {
				t.Fatal(err)
			}
			if err := r.enqueue(13, nil, "window/1"); err != nil {
				t.Fatal(err)
			}
			arrived, release := make(chan struct{}), make(chan struct{})
			r.mu.Lock()
			r.reply = func(string, int) int { return http.StatusOK }
			r.hold = func(key string, n int) {
				if key == "window/1" && n == 1 {
					close(arrived)
					<-release
				}
			}
			r.mu.Unlock()
			stopOld, ended := r.dispatch(13, 5)
			select {
			case <-arrived:
			case <-r.ctx.Done():
				t.Fatal("term 13 did not send")
			}
			stopNew, _ := r.dispatch(14, 5)
			testenv.Eventually(t, outboxTimeout/2, 5*time.Millisecond, "term 14 claimed the message", func() bool {
				return r.messages()["window/1"].ClaimToken == 14
			})
			close(release)
			select {
			case <-ended:
			case <-r.ctx.Done():
				t.Fatal("term 13's dispatcher did not stop")
			}
			if err := stopOld(); !errors.Is(err, outbox.ErrFenced) {
				t.Fatalf("term 13's Run = %v, want ErrFenced", err)
			}
			got := r.settled()
			if err := stopNew(); err != nil {
				t.Fatal(err)
			}
			m := got["window/1"]
			r.mu.Lock()
			tokens := strings.Join(r.tokens["window/1"], ",")
			r.mu.Unlock()
			if m.Status != scheduler.MessageDelivered || m.ClaimToken != 14 || tokens != "13,14" {
				t.Fatalf("message = %+v, Fencing-Tokens received %s; want delivered by term 14, tokens 13,14", m, tokens)
			}
		})
	})
}
