package outbox

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// silentSMTP listens on loopback, accepts connections and never writes a byte; it closes them
// when the test ends.
func silentSMTP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// countingStore is a Store of one claimed message that counts the records made of it.
type countingStore struct {
	mu      sync.Mutex
	queue   []scheduler.Message
	records []scheduler.Delivery
}

// ReleaseOutbox hands nothing back: the store's claims never lose their answers.
func (*countingStore) ReleaseOutbox(context.Context, int64, time.Time) (int64, error) { return 0, nil }

func (c *countingStore) ClaimOutbox(context.Context, int64, int, time.Time) ([]scheduler.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.queue
	c.queue = nil
	return out, nil
}

func (c *countingStore) RecordDelivery(_ context.Context, _ int64, _ string, d scheduler.Delivery) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, d)
	return nil
}

func (c *countingStore) recorded() []scheduler.Delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]scheduler.Delivery(nil), c.records...)
}

// dispatchOne runs a dispatcher over m with dl and a send timeout of sendTimeout until m is
// recorded, ends the term, and returns the records made: Run must return, and so every
// goroutine it started must have ended (goleak checks the rest in TestMain).
func dispatchOne(t *testing.T, m scheduler.Message, dl Deliverer, sendTimeout time.Duration) []scheduler.Delivery {
	t.Helper()
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	m.Updated, m.Attempts = now, 1
	st := &countingStore{queue: []scheduler.Message{m}}
	d, err := New(Config{Store: st, SendTimeout: sendTimeout, Now: func() time.Time { return now },
		Deliverers: map[scheduler.MessageKind]Deliverer{m.Kind: dl}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, 7) }()
	testenv.Eventually(t, 60*time.Second, 10*time.Millisecond, "the attempt recorded", func() bool {
		return len(st.recorded()) > 0
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil when ctx ends", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return after the term ended")
	}
	return st.recorded()
}

// wantOneRetry fails t unless recs is one retry whose error contains want.
func wantOneRetry(t *testing.T, recs []scheduler.Delivery, want string) {
	t.Helper()
	if len(recs) != 1 {
		t.Fatalf("%d records of the attempt, want 1: %+v", len(recs), recs)
	}
	if r := recs[0]; r.Outcome != scheduler.DeliveryRetry || !strings.Contains(r.Error, want) {
		t.Fatalf("record = %+v, want a retry whose error contains %q", r, want)
	}
}

// TestSMTP_HungReceivers: an SMTP server that accepts the connection and never answers, and
// one that hangs after reading DATA, hold a delivery no longer than the dispatcher's send
// timeout, however long the deliverer's own per-command timeout; the attempt is retried and
// recorded once, and nothing was accepted.
func TestSMTP_HungReceivers(t *testing.T) {
	t.Run("NeverAnswers", func(t *testing.T) {
		dl, err := NewSMTP(SMTPConfig{Addr: silentSMTP(t), From: "billing@example.test", TLS: NoTLS, Timeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		wantOneRetry(t, dispatchOne(t, email("k.silent", "client-1@example.test"), dl, 200*time.Millisecond), "deadline exceeded")
	})
	t.Run("HangsMidData", func(t *testing.T) {
		srv := testenv.MustSMTP(t, testenv.SMTPOptions{Stall: make(chan struct{})})
		dl, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: NoTLS, Timeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		wantOneRetry(t, dispatchOne(t, email("k.stall", "client-1@example.test"), dl, 500*time.Millisecond), "deadline exceeded")
		select {
		case <-srv.Stalled():
		default:
			t.Fatal("the server never read the DATA: the send ended before it")
		}
		if n := len(srv.Messages()); n != 0 {
			t.Fatalf("server accepted %d messages, want 0", n)
		}
	})
	t.Run("HangsMidDataWithinItsTimeout", func(t *testing.T) {
		srv := testenv.MustSMTP(t, testenv.SMTPOptions{Stall: make(chan struct{})})
		dl, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: NoTLS, Timeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		wantOneRetry(t, dispatchOne(t, email("k.stall2", "client-1@example.test"), dl, time.Hour), "timeout")
	})
}

// TestSMTP_StartTLSRequired: with STARTTLS required, a server that does not offer it gets no
// message in the clear; the attempt is retried with an error that says why.
func TestSMTP_StartTLSRequired(t *testing.T) {
	srv := testenv.MustSMTP(t, testenv.SMTPOptions{})
	dl, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: STARTTLS, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wantOneRetry(t, dispatchOne(t, email("k.tls", "client-1@example.test"), dl, 30*time.Second), "does not support STARTTLS")
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("server received %d messages in the clear, want 0", n)
	}
}

// TestWebhook_HungReceivers: an endpoint that never answers and one that streams an endless
// body hold a delivery no longer than the webhook's timeout; the attempt is retried and
// recorded once.
func TestWebhook_HungReceivers(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/silent":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/endless":
			w.WriteHeader(http.StatusOK)
			chunk := []byte(strings.Repeat("x", 4096))
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-release:
					return
				case <-r.Context().Done():
					return
				case <-time.After(time.Millisecond):
				}
			}
		}
	}))
	defer srv.Close()
	defer close(release)
	for _, c := range []struct{ path, want string }{
		{"/silent", "Timeout"},
		{"/endless", ""},
	} {
		t.Run(strings.TrimPrefix(c.path, "/"), func(t *testing.T) {
			dl, err := NewWebhook(WebhookConfig{Hosts: []string{"127.0.0.1"}, Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			recs := dispatchOne(t, hook("k"+strings.ReplaceAll(c.path, "/", "."), srv.URL+c.path), dl, time.Hour)
			if len(recs) != 1 {
				t.Fatalf("%d records of the attempt, want 1: %+v", len(recs), recs)
			}
			// An endless 200 is read within bounds and delivered; a silent endpoint times out.
			switch r := recs[0]; {
			case c.want == "" && r.Outcome != scheduler.DeliveryOK:
				t.Fatalf("record = %+v, want delivered once the status line arrived", r)
			case c.want != "" && (r.Outcome != scheduler.DeliveryRetry || !strings.Contains(r.Error, c.want)):
				t.Fatalf("record = %+v, want a retry whose error contains %q", r, c.want)
			}
		})
	}
}
