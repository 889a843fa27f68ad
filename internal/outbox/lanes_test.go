package outbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// laneMsgs returns n messages of kind to dest, keyed prefix/i.
func laneMsgs(prefix string, n int, kind scheduler.MessageKind, dest string) []scheduler.Message {
	var ms []scheduler.Message
	for i := range n {
		ms = append(ms, scheduler.Message{Key: fmt.Sprintf("%s/%d", prefix, i), Kind: kind, Destination: dest})
	}
	return ms
}

// startAll takes messages from l until it gives none, and counts them by destination.
func startAll(l *lanes) map[string]int {
	got := map[string]int{}
	for m, ok := l.next(); ok; m, ok = l.next() {
		got[destination(m)]++
	}
	return got
}

func TestDestination(t *testing.T) {
	for _, c := range []struct {
		kind       scheduler.MessageKind
		dest, want string
	}{
		{scheduler.MessageEmail, "a@example.test", "email"},
		{scheduler.MessageEmail, "b@other.test", "email"},
		{scheduler.MessageWebhook, "https://Hooks.Example.test/a?x=1", "webhook https://hooks.example.test:443"},
		{scheduler.MessageWebhook, "https://hooks.example.test:443/b", "webhook https://hooks.example.test:443"},
		{scheduler.MessageWebhook, "http://hooks.example.test/b", "webhook http://hooks.example.test:80"},
		{scheduler.MessageWebhook, "http://hooks.example.test:8080/b", "webhook http://hooks.example.test:8080"},
		{scheduler.MessageWebhook, "::not a url", "webhook"},
	} {
		if got := destination(scheduler.Message{Kind: c.kind, Destination: c.dest}); got != c.want {
			t.Errorf("destination(%s %q) = %q, want %q", c.kind, c.dest, got, c.want)
		}
	}
}

// TestLanes: one destination alone gets every slot; destinations not heard from yet share
// them, half each, and a free slot goes to the one with the fewest in flight; a failing
// destination gets one at a time, failing ones together half, and its waiting messages but the
// probe are taken out for the hand-back; an answer gives it back its share.
func TestLanes(t *testing.T) {
	const hangs, other = "http://hangs.test/x", "http://other.test/x"
	t.Run("AloneTakesEverySlot", func(t *testing.T) {
		l := newLanes(8)
		l.add(laneMsgs("mail", 20, scheduler.MessageEmail, "a@example.test"))
		if got := startAll(l); got["email"] != 8 {
			t.Fatalf("started %v, want 8 e-mails", got)
		}
		if waiting, ready := l.counts(); waiting != 12 || ready != 12 {
			t.Fatalf("waiting %d, ready %d; want 12, 12", waiting, ready)
		}
	})
	t.Run("ShareWhileOthersWait", func(t *testing.T) {
		l := newLanes(8)
		l.add(laneMsgs("hook", 20, scheduler.MessageWebhook, hangs))
		l.add(laneMsgs("mail", 20, scheduler.MessageEmail, "a@example.test"))
		if got := startAll(l); got["webhook http://hangs.test:80"] != 4 || got["email"] != 4 {
			t.Fatalf("started %v, want 4 of each", got)
		}
		// An e-mail ends: its slot goes to the e-mails, which hold fewer.
		l.done(scheduler.Message{Kind: scheduler.MessageEmail}, answered)
		if m, ok := l.next(); !ok || m.Kind != scheduler.MessageEmail {
			t.Fatalf("next after an e-mail ended = %+v (%v), want an e-mail", m, ok)
		}
	})
	t.Run("NotHeardFromTakesHalfBesideAnother", func(t *testing.T) {
		l := newLanes(4)
		l.add(laneMsgs("mail", 1, scheduler.MessageEmail, "a@example.test"))
		mail, _ := l.next()
		l.done(mail, answered)
		// The e-mails are done for now; the next claim brings only webhooks of a receiver
		// not heard from yet: it takes half, the rest is kept for the e-mails to come.
		l.add(laneMsgs("hook", 10, scheduler.MessageWebhook, hangs))
		if got := startAll(l); got["webhook http://hangs.test:80"] != 2 {
			t.Fatalf("started %v, want 2 webhooks", got)
		}
		if waiting, ready := l.counts(); waiting != 8 || ready != 0 {
			t.Fatalf("waiting %d, ready %d; want 8, 0: the claims go on for the others", waiting, ready)
		}
		for range idleClaims {
			l.add(nil)
		}
		if got := startAll(l); got["webhook http://hangs.test:80"] != 2 {
			t.Fatalf("started %v once the e-mails' lane is forgotten, want 2 more webhooks: alone, it takes every slot", got)
		}
	})
	t.Run("FailingGetsOneAtATime", func(t *testing.T) {
		l := newLanes(8)
		hook := laneMsgs("hook", 20, scheduler.MessageWebhook, hangs)
		l.add(hook[:8])
		if got := startAll(l); got["webhook http://hangs.test:80"] != 8 {
			t.Fatalf("started %v, want 8 webhooks: alone, it takes every slot", got)
		}
		l.add(hook[8:])
		l.add(laneMsgs("mail", 20, scheduler.MessageEmail, "a@example.test"))
		if changed, failures := l.done(hook[0], failed); !changed || failures != 1 {
			t.Fatalf("done(failed) = %v, %d; want changed, 1", changed, failures)
		}
		mail, ok := l.next()
		if _, more := l.next(); !ok || mail.Kind != scheduler.MessageEmail || more {
			t.Fatalf("started %+v (%v, more %v), want the one free slot to an e-mail", mail, ok, more)
		}
		l.done(mail, answered) // the relay answers: it may take every slot
		if df := l.deferrals(); len(df) != 1 || len(df[0].keys) != 12 || df[0].failures != 1 {
			t.Fatalf("deferrals %+v, want the 12 waiting webhooks: one is in flight", df)
		}
		for _, m := range hook[1:8] { // the rest of the first wave times out
			l.done(m, failed)
		}
		l.add(hook[8:9])
		got := startAll(l)
		if got["webhook http://hangs.test:80"] != 1 || got["email"] != 7 {
			t.Fatalf("started %v, want one webhook (the probe) and 7 e-mails", got)
		}
		if df := l.deferrals(); len(df) != 0 {
			t.Fatalf("deferrals %+v, want none: the probe is in flight and nothing else waits for it", df)
		}
		l.add(hook[9:11])
		if df := l.deferrals(); len(df) != 1 || len(df[0].keys) != 2 || df[0].failures != 8 {
			t.Fatalf("deferrals %+v, want the 2 webhooks that wait behind the probe, after 8 failures", df)
		}
		for range idleFailingClaims {
			l.add(nil)
		}
		if ln := l.byDest["webhook http://hangs.test:80"]; ln == nil || ln.failures != 8 {
			t.Fatalf("failing lane with its probe in flight = %+v, want kept however long", ln)
		}
		// It answers: it shares the slots again.
		if changed, failures := l.done(hook[8], answered); !changed || failures != 0 {
			t.Fatalf("done(answered) = %v, %d; want changed, 0", changed, failures)
		}
		l.add(hook[11:])
		if m, ok := l.next(); !ok || m.Kind != scheduler.MessageWebhook {
			t.Fatalf("next once it answered = %+v (%v), want a webhook: it holds fewer than the e-mails", m, ok)
		}
	})
	t.Run("FailingTogetherHalf", func(t *testing.T) {
		l := newLanes(4)
		var probes []scheduler.Message
		for i := range 4 {
			dest := fmt.Sprintf("http://hangs.test:%d/x", 8000+i)
			ms := laneMsgs(fmt.Sprintf("hook%d", i), 2, scheduler.MessageWebhook, dest)
			l.add(ms[:1])
			probes = append(probes, ms[1])
		}
		for m, ok := l.next(); ok; m, ok = l.next() {
			l.done(m, failed) // each port fails once
		}
		l.add(probes)
		l.byDest["email"] = &lane{answered: true}
		l.add(laneMsgs("mail", 10, scheduler.MessageEmail, "a@example.test"))
		if got := startAll(l); got["email"] != 2 || len(got) != 3 {
			t.Fatalf("started %v, want two failing ports probed (half the slots) and 2 e-mails", got)
		}
		if _, ready := l.counts(); ready != 8 {
			t.Fatalf("ready %d, want the 8 waiting e-mails alone", ready)
		}
		// The two probes that wait for the failing ports' half are handed back, not kept in
		// the claims' room.
		if df := l.deferrals(); len(df) != 2 || len(df[0].keys) != 1 || len(df[1].keys) != 1 {
			t.Fatalf("deferrals %+v, want the 2 probes that cannot start", df)
		}
		if waiting, _ := l.counts(); waiting != 8 {
			t.Fatalf("waiting %d after the hand-back, want the 8 e-mails", waiting)
		}
	})
	t.Run("ForgottenWhenIdle", func(t *testing.T) {
		l := newLanes(4)
		hook := laneMsgs("hook", 1, scheduler.MessageWebhook, hangs)
		mail := laneMsgs("mail", 1, scheduler.MessageEmail, "a@example.test")
		l.add(append(hook, mail...))
		for m, ok := l.next(); ok; m, ok = l.next() {
			l.done(m, map[bool]verdict{true: failed, false: answered}[m.Kind == scheduler.MessageWebhook])
		}
		for range idleClaims + 1 {
			l.add(nil)
		}
		if _, ok := l.byDest["email"]; ok || l.byDest["webhook http://hangs.test:80"] == nil {
			t.Fatalf("lanes after %d idle claims: %v, want the failing one alone", idleClaims+1, l.byDest)
		}
		for range idleFailingClaims {
			l.add(nil)
		}
		if len(l.byDest) != 0 {
			t.Fatalf("lanes after %d idle claims: %v, want none", idleFailingClaims, l.byDest)
		}
	})
	t.Run("Drop", func(t *testing.T) {
		l := newLanes(2)
		ms := laneMsgs("mail", 5, scheduler.MessageEmail, "a@example.test")
		l.add(ms)
		m, _ := l.next()
		l.drop()
		if waiting, _ := l.counts(); waiting != 0 {
			t.Fatalf("waiting %d after drop, want 0", waiting)
		}
		l.abandon(m)
		if _, ok := l.next(); ok || l.inflight != 0 {
			t.Fatalf("after drop and abandon: %d in flight, a message to start: %v; want none", l.inflight, ok)
		}
	})
}

// TestDispatcher_OneRelayFullConcurrency: with every e-mail through one real SMTP relay and
// nothing else queued, the relay gets every slot: as many sessions wait in DATA at once as the
// dispatcher's concurrency, and all are delivered once it answers.
func TestDispatcher_OneRelayFullConcurrency(t *testing.T) {
	stall := make(chan struct{})
	srv := testenv.MustSMTP(t, testenv.SMTPOptions{Stall: stall})
	defer func() {
		select {
		case <-stall:
		default:
			close(stall)
		}
	}()
	dl, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: NoTLS, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	st := &fakeStore{queue: queued(12, now)}
	d, err := New(Config{Store: st, Concurrency: 4, Batch: 5, SendTimeout: time.Minute, Poll: time.Millisecond,
		Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: dl}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, 7) }()
	for i := range 4 {
		select {
		case <-srv.Stalled():
		case <-ctx.Done():
			t.Fatalf("%d sessions in DATA at once, want 4", i)
		}
	}
	close(stall)
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "every e-mail delivered", func() bool {
		for _, m := range queued(12, now) {
			if r, ok := st.record(m.Key); !ok || r.Outcome != scheduler.DeliveryOK {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Messages()); n != 12 {
		t.Fatalf("relay accepted %d e-mails, want 12", n)
	}
}

// TestUnanswered: what makes a destination failing, from real servers' errors: a relay or a
// receiver that does not answer (silent, refusing connections, hanging past the timeout) does;
// one that replies "try later" (an SMTP 451, a webhook 503 or 429) does not, so that one
// message's refusal does not slow the relay's others.
func TestUnanswered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	later := testenv.MustSMTP(t, testenv.SMTPOptions{Refuse: func(string) (int, string) { return 451, "try again later" }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() // nothing listens there once it is closed
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/503":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/429":
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(hold) // before the server waits for its handlers
	hooks, err := NewWebhook(WebhookConfig{Hosts: []string{"127.0.0.1"}, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	smtpTo := func(addr string) Deliverer {
		dl, err := NewSMTP(SMTPConfig{Addr: addr, From: "billing@example.test", TLS: NoTLS, Timeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return dl
	}
	for _, c := range []struct {
		name string
		dl   Deliverer
		m    scheduler.Message
		want bool
	}{
		{"SMTPSilent", smtpTo(silentSMTP(t)), email("k", "a@example.test"), true},
		{"SMTPTryLater", smtpTo(later.Addr), email("k", "a@example.test"), false},
		{"WebhookHangs", hooks, hook("k", srv.URL+"/hang"), true},
		{"Webhook503", hooks, hook("k", srv.URL+"/503"), false},
		{"Webhook429", hooks, hook("k", srv.URL+"/429"), false},
		{"WebhookRefused", hooks, hook("k", refused+"/x"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.dl.Deliver(ctx, c.m, 7)
			if err == nil || IsPermanent(err) {
				t.Fatalf("deliver: err %v, want a retryable error", err)
			}
			if got := unanswered(err); got != c.want {
				t.Fatalf("unanswered(%v) = %v, want %v", err, got, c.want)
			}
		})
	}
}
