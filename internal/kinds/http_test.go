package kinds

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"scheduler"
)

// recorder is a test service that records the requests it gets and answers with status and body.
type recorder struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies []string
	status int
	body   string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, r)
	rec.bodies = append(rec.bodies, string(b))
	status, body := rec.status, rec.body
	rec.mu.Unlock()
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (rec *recorder) last(t *testing.T) (*http.Request, string) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("the service got no request")
	}
	return rec.reqs[len(rec.reqs)-1], rec.bodies[len(rec.bodies)-1]
}

func newService(t *testing.T, status int, body string) (*recorder, *httptest.Server) {
	t.Helper()
	rec := &recorder{status: status, body: body}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, srv
}

func mustHTTP(t *testing.T, client *http.Client, cfg HTTPConfig) *HTTPJob {
	t.Helper()
	j, err := NewHTTP(client, cfg)
	if err != nil {
		t.Fatalf("NewHTTP: %v", err)
	}
	return j
}

func TestHTTPJob_Request(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	rec, srv := newService(t, http.StatusOK, "billed")
	j := mustHTTP(t, srv.Client(), HTTPConfig{
		URL:     srv.URL + "/hooks/billing?x=1",
		Headers: map[string]string{"X-Api-Key": "k1", "host": "billing.internal"},
	})
	run := scheduler.Attempt{Job: "billing", Slot: time.Date(2024, 10, 26, 2, 30, 0, 0, berlin), Token: 77, Attempt: 3, RunID: "billing@1730000000"}
	out, err := j.Execute(ctx, run)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if out != "200 OK\nbilled" {
		t.Fatalf("output = %q, want status line and body", out)
	}
	req, body := rec.last(t)
	if req.Method != http.MethodPost || req.URL.String() != "/hooks/billing?x=1" || body != "" {
		t.Fatalf("request = %s %s with body %q, want POST /hooks/billing?x=1 without body", req.Method, req.URL, body)
	}
	if req.Host != "billing.internal" {
		t.Fatalf("Host = %q, want the configured billing.internal", req.Host)
	}
	want := map[string]string{
		"Fencing-Token":            "77",
		"Idempotency-Key":          "billing@1730000000",
		"X-Scheduler-Job":          "billing",
		"X-Scheduler-Scheduled-At": "2024-10-26T02:30:00+02:00",
		"X-Api-Key":                "k1",
	}
	for k, v := range want {
		if got := req.Header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("header %s = %q, want [%q]", k, got, v)
		}
	}

	t.Run("ConfiguredMethod", func(t *testing.T) {
		j := mustHTTP(t, srv.Client(), HTTPConfig{URL: srv.URL, Method: "PUT"})
		if _, err := j.Execute(ctx, run); err != nil {
			t.Fatalf("Execute: %v", err)
		}
		if req, _ := rec.last(t); req.Method != http.MethodPut {
			t.Fatalf("method = %s, want PUT", req.Method)
		}
	})
}

func TestHTTPJob_Status(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	tests := []struct {
		status    int
		ok        bool
		refused   bool // the receiver refused the token: the run ends, the term does not
		permanent bool
	}{
		{200, true, false, false},
		{201, true, false, false},
		{204, true, false, false},
		{409, false, true, false},
		{500, false, false, false},
		{502, false, false, false},
		{503, false, false, false},
		{408, false, false, false},
		{429, false, false, false},
		{400, false, false, true},
		{401, false, false, true},
		{404, false, false, true},
		{422, false, false, true},
		{304, false, false, true},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			_, srv := newService(t, tt.status, "")
			out, err := mustHTTP(t, srv.Client(), HTTPConfig{URL: srv.URL}).Execute(ctx, testRun())
			if (err == nil) != tt.ok {
				t.Fatalf("status %d: err = %v, want ok=%v", tt.status, err, tt.ok)
			}
			if errors.Is(err, scheduler.ErrRefused) != tt.refused || scheduler.IsPermanent(err) != tt.permanent {
				t.Fatalf("status %d: err = %v: refused=%v permanent=%v, want %v %v",
					tt.status, err, errors.Is(err, scheduler.ErrRefused), scheduler.IsPermanent(err), tt.refused, tt.permanent)
			}
			if errors.Is(err, scheduler.ErrFenced) {
				t.Fatalf("status %d: err = %v wraps ErrFenced: only the store may end a term", tt.status, err)
			}
			if !strings.HasPrefix(out, strconv.Itoa(tt.status)+" ") {
				t.Fatalf("output %q does not show the status", out)
			}
		})
	}
}

func TestHTTPJob_Failures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()

	t.Run("Timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer srv.Close()
		defer close(release)
		rctx, rcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer rcancel()
		_, err := mustHTTP(t, srv.Client(), HTTPConfig{URL: srv.URL}).Execute(rctx, testRun())
		if !errors.Is(err, context.DeadlineExceeded) || scheduler.IsPermanent(err) || errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("err = %v, want a retryable deadline error", err)
		}
	})

	t.Run("ConnectionRefused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url, client := srv.URL, srv.Client()
		srv.Close()
		_, err := mustHTTP(t, client, HTTPConfig{URL: url}).Execute(ctx, testRun())
		if err == nil || scheduler.IsPermanent(err) || errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("err = %v, want a retryable transport error", err)
		}
	})

	t.Run("BodyExcerpt", func(t *testing.T) {
		_, srv := newService(t, http.StatusInternalServerError, "HEAD"+strings.Repeat("x", 10000)+"TAIL")
		out, err := mustHTTP(t, srv.Client(), HTTPConfig{URL: srv.URL, OutputLimit: 100}).Execute(ctx, testRun())
		if err == nil {
			t.Fatal("Execute succeeded on 500")
		}
		if !strings.HasPrefix(out, "500 Internal Server Error\nHEAD") || !strings.HasSuffix(out, "TAIL") ||
			!strings.Contains(out, "bytes omitted") || len(out) > 200 {
			t.Fatalf("output = %q, want status, head, marker and tail within the limit", out)
		}
	})

	t.Run("PasswordNotInError", func(t *testing.T) {
		_, srv := newService(t, http.StatusBadRequest, "")
		url := strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1)
		_, err := mustHTTP(t, srv.Client(), HTTPConfig{URL: url}).Execute(ctx, testRun())
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("err = %v, want an error without the password", err)
		}
	})
}

func TestNewHTTP_Invalid(t *testing.T) {
	tests := []struct {
		name   string
		client *http.Client
		cfg    HTTPConfig
		errHas string
	}{
		{"NoClient", nil, HTTPConfig{URL: "http://x"}, "http client: required"},
		{"NoURL", http.DefaultClient, HTTPConfig{}, "url: is required"},
		{"Scheme", http.DefaultClient, HTTPConfig{URL: "ftp://x/y"}, "url: must be an absolute http"},
		{"NoHost", http.DefaultClient, HTTPConfig{URL: "http:///path"}, "url: must be an absolute http"},
		{"Method", http.DefaultClient, HTTPConfig{URL: "http://x", Method: "GE T"}, "method:"},
		{"MethodLowerCase", http.DefaultClient, HTTPConfig{URL: "http://x", Method: "put"}, `method: must be one of GET, POST, PUT, PATCH, DELETE; got "put"`},
		{"HeaderName", http.DefaultClient, HTTPConfig{URL: "http://x", Headers: map[string]string{"Bad Name": "v"}}, "invalid header name"},
		{"HeaderValue", http.DefaultClient, HTTPConfig{URL: "http://x", Headers: map[string]string{"X-A": "v\r\nX-B: w"}}, "line break"},
		{"RunHeader", http.DefaultClient, HTTPConfig{URL: "http://x", Headers: map[string]string{"fencing-token": "1"}}, "set by the scheduler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewHTTP(tt.client, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("NewHTTP: err = %v, want one containing %q", err, tt.errHas)
			}
		})
	}
}
