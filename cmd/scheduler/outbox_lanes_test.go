package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/outbox"
	"scheduler/internal/testenv"
)

// laneEmails and laneHooks are how many e-mails and webhooks a lanes test queues, one webhook
// after every laneEvery-1 e-mails, so that each claim holds both.
const (
	laneEmails = 40
	laneHooks  = 10
	laneEvery  = 5
)

// enqueueMixed queues laneEmails e-mails (mixed/mail/i) and laneHooks webhooks to the rig's
// receiver (mixed/hook/i), interleaved, in one transaction of term token: they are due
// together and claimed in that order.
func (r *outboxRig) enqueueMixed(token int64) (emails, hooks []string) {
	r.t.Helper()
	slot := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	var msgs []scheduler.Message
	for i := 0; len(emails) < laneEmails || len(hooks) < laneHooks; i++ {
		m := scheduler.Message{Job: "invoices", ScheduledAt: slot, Token: token, Subject: "Invoice", Body: "Amount due: 10"}
		if i%laneEvery == 0 && len(hooks) < laneHooks {
			m.Key, m.Kind, m.Destination, m.Body = fmt.Sprintf("mixed/hook/%d", len(hooks)), scheduler.MessageWebhook, r.http.URL+"/invoices", `{"client":1}`
			hooks = append(hooks, m.Key)
		} else {
			m.Key, m.Kind, m.Destination = fmt.Sprintf("mixed/mail/%d", len(emails)), scheduler.MessageEmail, fmt.Sprintf("client-%d@example.test", i)
			emails = append(emails, m.Key)
		}
		msgs = append(msgs, m)
	}
	if err := r.store.Fenced(r.ctx, "invoices", token, func(ctx context.Context, tx scheduler.Tx) error {
		for _, m := range msgs {
			if _, err := r.store.Enqueue(ctx, tx, m); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		r.t.Fatal(err)
	}
	return emails, hooks
}

// holdHooks makes the rig's receiver hold every request until release is called (at the
// latest when the test ends, before the receiver stops).
func (r *outboxRig) holdHooks() (release func()) {
	held := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	r.t.Cleanup(release)
	r.mu.Lock()
	r.hold = func(string, int) { <-held }
	r.mu.Unlock()
	return release
}

// dispatchLanes runs a dispatcher over st (Concurrency 4, Batch 10) whose webhooks give up
// after hookTimeout, until stop; claimTTL, if given, is its Config.ClaimTTL.
func (r *outboxRig) dispatchLanes(st outbox.Store, token int64, hookTimeout time.Duration, claimTTL ...time.Duration) (stop func() error) {
	cfg := outbox.Config{Store: st, Batch: 10, Concurrency: 4, MaxAttempts: 1000, SendTimeout: outboxTimeout,
		RetryBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Poll: 5 * time.Millisecond,
		Fenced:     func(err error) bool { return errors.Is(err, fence.ErrStale) },
		Deliverers: r.deliverers(hookTimeout),
		Logger:     zaptest.NewLogger(r.t)}
	for _, ttl := range claimTTL {
		cfg.ClaimTTL = ttl
	}
	d, err := outbox.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, token) }()
	var res error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			res = <-done
		}
		return res
	}
	r.t.Cleanup(func() { _ = stop() })
	return stop
}

// waitEmails waits until the SMTP server holds every e-mail of keys, and fails t with how many
// arrived (and how long the last of them waited) if they do not within the bound.
func (r *outboxRig) waitEmails(keys []string, queued time.Time) {
	r.t.Helper()
	deadline := time.Now().Add(outboxTimeout / 3)
	for {
		ids := r.smtp.MessageIDs()
		n := 0
		for _, k := range keys {
			if ids["<"+k+"@example.test>"] > 0 {
				n++
			}
		}
		if n == len(keys) {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d of %d e-mails delivered in %s while the webhook receiver held its requests: the others waited behind it",
				n, len(keys), time.Since(queued).Round(time.Second))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// heldMixed queues the mixed messages under term 10 while the receiver holds every request,
// dispatches them over st with webhooks that give up after hookTimeout, and returns once every e-mail
// is delivered (failing t if they are not); settle lets the receiver answer, waits for every
// message to settle and ends the term.
func (r *outboxRig) heldMixed(st outbox.Store, hookTimeout time.Duration) (emails, hooks []string, settle func() map[string]scheduler.Message) {
	r.t.Helper()
	release := r.holdHooks()
	queued := time.Now()
	emails, hooks = r.enqueueMixed(10)
	stop := r.dispatchLanes(st, 10, hookTimeout)
	r.waitEmails(emails, queued)
	return emails, hooks, func() map[string]scheduler.Message {
		r.t.Helper()
		release()
		got := r.settled()
		if err := stop(); err != nil {
			r.t.Fatal(err)
		}
		return got
	}
}

// wantOnce fails t unless every message of keys is delivered and was received once.
func (r *outboxRig) wantOnce(got map[string]scheduler.Message, emails, hooks []string) {
	r.t.Helper()
	ids := r.smtp.MessageIDs()
	for _, k := range emails {
		if n := ids["<"+k+"@example.test>"]; n != 1 || got[k].Status != scheduler.MessageDelivered {
			r.t.Errorf("e-mail %s: received %d times, status %s; want once, delivered", k, n, got[k].Status)
		}
	}
	for _, k := range hooks {
		if got[k].Status != scheduler.MessageDelivered {
			r.t.Errorf("webhook %s: status %s, want delivered", k, got[k].Status)
		}
	}
}

// TestOutbox_HangingReceiverHoldsUpNoOne: a webhook receiver that accepts every request and
// answers none until the test lets it holds part of the slots, and every e-mail queued with its
// webhooks is delivered, once, while it still holds them; once it answers, its webhooks are
// delivered, each sent once. Before, its webhooks took every slot in claim order, and the
// e-mails behind them waited for as long as it held them.
func TestOutbox_HangingReceiverHoldsUpNoOne(t *testing.T) {
	forEachOutboxStore(t, func(t *testing.T, r *outboxRig) {
		emails, hooks, settle := r.heldMixed(r.store, outboxTimeout)
		held := r.messages()
		for _, k := range hooks {
			if m := held[k]; m.Status == scheduler.MessageDelivered {
				t.Fatalf("webhook %s delivered while its receiver held every request: %+v", k, m)
			}
		}
		got := settle()
		r.wantOnce(got, emails, hooks)
		for _, k := range hooks {
			if n := r.hookCount(k); n != 1 {
				t.Errorf("webhook %s: %d requests, want 1: none of them gave up", k, n)
			}
		}
	})
}

// lostDeferStore hands messages back through the real store, and the first time a hand-back
// commits it reports it failed, as when the connection breaks between a commit and its reply.
type lostDeferStore struct {
	*fence.Store
	lose atomic.Bool
}

func (l *lostDeferStore) DeferOutbox(ctx context.Context, token int64, keys []string, now, next time.Time) (int64, error) {
	n, err := l.Store.DeferOutbox(ctx, token, keys, now, next)
	if err == nil && n > 0 && l.lose.CompareAndSwap(true, false) {
		return 0, errors.New("unexpected EOF: the reply of the commit was lost")
	}
	return n, err
}

// TestOutbox_FailingReceiverIsHandedBack: a receiver that holds every request past the
// webhook's timeout fails each attempt; every e-mail is delivered while it fails, its waiting
// webhooks are handed back to the store without an attempt counted (so each webhook's attempts
// are the requests the receiver saw for it, and none is dead, though never sent), and once it
// answers every webhook is delivered. A hand-back whose answer is lost sends none of its
// messages in that claim: they are released once nothing is in flight (a message sent twice
// in the term would show one more request than attempts).
func TestOutbox_FailingReceiverIsHandedBack(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(map[bool]string{false: "HandedBack", true: "AnswerLost"}[lost], func(t *testing.T) {
			forEachOutboxStore(t, func(t *testing.T, r *outboxRig) {
				st := &lostDeferStore{Store: r.store}
				st.lose.Store(lost)
				emails, hooks, settle := r.heldMixed(st, 200*time.Millisecond)
				testenv.Eventually(t, outboxTimeout/3, 5*time.Millisecond, "a webhook handed back, never sent", func() bool {
					for k, m := range r.messages() {
						if m.Kind == scheduler.MessageWebhook && m.Status == scheduler.MessagePending && m.Attempts == 0 && r.hookCount(k) == 0 {
							return !st.lose.Load()
						}
					}
					return false
				})
				got := settle()
				r.wantOnce(got, emails, nil)
				for _, k := range hooks {
					if m, n := got[k], r.hookCount(k); m.Status != scheduler.MessageDelivered || m.Attempts != n {
						t.Errorf("webhook %s: status %s, %d attempts, %d requests; want delivered, one attempt per request", k, m.Status, m.Attempts, n)
					}
				}
			})
		})
	}
}

// TestOutbox_TermEndsWhileReceiverHangs: the term ends while the receiver holds requests and
// webhooks wait in their lane: those cut short are retried at once and those waiting stay
// sending, and the next term delivers every one of them, with one attempt per request, but
// for the attempt the older term's claim counted of those it never sent (as when a term ends
// with a claim not sent: they are sent once, by the next term).
func TestOutbox_TermEndsWhileReceiverHangs(t *testing.T) {
	forEachOutboxStore(t, func(t *testing.T, r *outboxRig) {
		release := r.holdHooks()
		queued := time.Now()
		emails, hooks := r.enqueueMixed(10)
		stop := r.dispatchLanes(r.store, 10, outboxTimeout)
		r.waitEmails(emails, queued)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		unsent := map[string]bool{}
		for _, k := range hooks {
			m := r.messages()[k]
			switch {
			case m.Status == scheduler.MessageSending && r.hookCount(k) == 0:
				unsent[k] = true
			case m.Status != scheduler.MessagePending && m.Status != scheduler.MessageSending:
				t.Fatalf("webhook %s = %+v when the term ended, want pending or sending", k, m)
			}
		}
		if len(unsent) == 0 {
			t.Fatal("no webhook waited in its lane, claimed and not sent, when the term ended")
		}
		if err := r.store.RaiseAll(r.ctx, []string{"invoices"}, 11); err != nil {
			t.Fatal(err)
		}
		release()
		stop = r.dispatchLanes(r.store, 11, outboxTimeout)
		got := r.settled()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		r.wantOnce(got, emails, hooks)
		for _, k := range hooks {
			r.mu.Lock()
			tokens := r.tokens[k]
			r.mu.Unlock()
			want := len(tokens)
			if unsent[k] {
				want++
			}
			if m := got[k]; m.Attempts != want || tokens[len(tokens)-1] != "11" || (unsent[k] && len(tokens) != 1) {
				t.Errorf("webhook %s (unsent by term 10: %v): %d attempts, requests with tokens %v; want %d, the last by term 11",
					k, unsent[k], m.Attempts, tokens, want)
			}
		}
	})
}
