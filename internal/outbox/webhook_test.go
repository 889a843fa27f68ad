package outbox

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"scheduler"
)

// hook returns a webhook message with key to u.
func hook(key, u string) scheduler.Message {
	return scheduler.Message{Key: key, Job: "invoices", Kind: scheduler.MessageWebhook, Destination: u,
		Body: `{"client":1,"amount":"10.00"}`, ScheduledAt: time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC), Token: 7}
}

// TestWebhook_Deliver posts to a real HTTP server: the headers and body arrive, and each
// reply is classified as delivered, retryable or permanent.
func TestWebhook_Deliver(t *testing.T) {
	type request struct {
		key, token, ctype, body string
	}
	var (
		mu   sync.Mutex
		got  []request
		hold = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, request{r.Header.Get("Idempotency-Key"), r.Header.Get("Fencing-Token"), r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
		switch r.URL.Path {
		case "/slow":
			<-hold
		case "/redirect":
			http.Redirect(w, r, "/ok", http.StatusFound)
		default:
			code, _ := strconv.Atoi(r.URL.Path[1:])
			if code == 0 {
				code = http.StatusNoContent
			}
			w.WriteHeader(code)
			_, _ = io.WriteString(w, "reply body")
		}
	}))
	defer srv.Close()
	defer close(hold)
	w, err := NewWebhook(WebhookConfig{Hosts: []string{"127.0.0.1"}, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := w.Deliver(ctx, hook("invoices/1", srv.URL+"/ok"), 42); err != nil {
		t.Fatalf("deliver to a 204: %v", err)
	}
	if r := got[0]; r.key != "invoices/1" || r.token != "42" || r.ctype != "application/json" || r.body != `{"client":1,"amount":"10.00"}` {
		t.Fatalf("request = %+v", r)
	}
	for _, c := range []struct {
		path      string
		permanent bool
	}{
		{"/500", false}, {"/503", false}, {"/408", false}, {"/429", false}, {"/slow", false},
		{"/400", true}, {"/404", true}, {"/410", true}, {"/redirect", true},
	} {
		err := w.Deliver(ctx, hook("k", srv.URL+c.path), 42)
		if err == nil || IsPermanent(err) != c.permanent {
			t.Errorf("deliver to %s: err %v, want an error, permanent %v", c.path, err, c.permanent)
		}
	}
	mu.Lock()
	for _, r := range got {
		if r.body != `{"client":1,"amount":"10.00"}` {
			t.Errorf("a request went to the redirect's target or lost its body: %+v", r)
		}
	}
	n := len(got)
	mu.Unlock()
	if n != 10 {
		t.Fatalf("server saw %d requests, want 10 (redirect not followed)", n)
	}

	u, _ := url.Parse(srv.URL)
	only, err := NewWebhook(WebhookConfig{Hosts: []string{"hooks.example.test"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []scheduler.Message{
		hook("k", srv.URL+"/ok"), // allowed hosts exclude the server
		hook("k", "ftp://"+u.Host+"/x"),
		hook("k", "http://user:pw@hooks.example.test/x"),
		func() scheduler.Message { m := hook("k", "http://hooks.example.test/x"); m.Body = "not json"; return m }(),
	} {
		if err := only.Deliver(ctx, m, 42); !IsPermanent(err) {
			t.Errorf("deliver %q with body %q: err %v, want permanent", m.Destination, m.Body, err)
		}
	}
	if _, err := NewWebhook(WebhookConfig{Hosts: []string{"h:80"}}); err == nil {
		t.Error("NewWebhook with a host:port: no error")
	}
}

// TestWebhook_RefusesHostsNotAllowed: a job's destination cannot make the leader post to a
// host that is not listed (loopback, a metadata address), and with no hosts listed every
// webhook is refused; the receiver sees no request.
func TestWebhook_RefusesHostsNotAllowed(t *testing.T) {
	var (
		mu sync.Mutex
		n  int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		name  string
		hosts []string
		dest  string
	}{
		{"NoHostsListed", nil, srv.URL + "/ok"},
		{"LoopbackNotListed", []string{"hooks.example.test"}, srv.URL + "/ok"},
		{"LocalhostByName", []string{"hooks.example.test"}, "http://localhost:" + u.Port() + "/ok"},
		{"MetadataAddress", []string{"hooks.example.test"}, "http://169.254.169.254/latest/meta-data/"},
		{"IPv6Loopback", []string{"hooks.example.test"}, "http://[::1]:" + u.Port() + "/ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := NewWebhook(WebhookConfig{Hosts: c.hosts, Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Deliver(ctx, hook("k", c.dest), 42); !IsPermanent(err) {
				t.Fatalf("deliver to %s: err %v, want permanent", c.dest, err)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 0 {
		t.Fatalf("server saw %d requests, want 0", n)
	}
	// Hosts compare without case; listed, the loopback server is reached.
	w, err := NewWebhook(WebhookConfig{Hosts: []string{"LOCALHOST"}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
	err = w.Deliver(ctx, hook("k", "http://Localhost:"+u.Port()+"/ok"), 42)
	mu.Lock()
	if err != nil || n != 1 {
		t.Fatalf("deliver to a listed host: err %v, server saw %d requests, want nil and 1", err, n)
	}
	for _, h := range []string{"", "h:80", "h/x", "[::1]", "u@h"} {
		if err := CheckWebhookHost(h); err == nil {
			t.Errorf("CheckWebhookHost(%q): no error", h)
		}
	}
}
