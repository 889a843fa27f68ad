package kinds

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"scheduler"
)

// redirector answers every request with status and a Location of to.
func redirector(t *testing.T, status int, to func() string) (*recorder, *httptest.Server) {
	t.Helper()
	rec := &recorder{status: http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			rec.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Location", to())
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return rec, srv
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

func TestHTTPJob_Redirects(t *testing.T) {
	run := scheduler.Attempt{Job: "hook", Slot: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC), Token: 9, Attempt: 1, RunID: "hook@1"}
	headers := map[string]string{"X-Api-Key": "k1"}

	t.Run("NotFollowedByDefault", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		other, otherSrv := newService(t, http.StatusOK, "")
		_, srv := redirector(t, http.StatusFound, func() string { return otherSrv.URL + "/steal" })
		j := mustHTTP(t, &http.Client{}, HTTPConfig{URL: srv.URL + "/hook", Headers: headers})
		out, err := j.Execute(ctx, run)
		if err == nil || !scheduler.IsPermanent(err) {
			t.Fatalf("err=%v, want a permanent failure", err)
		}
		if !strings.Contains(err.Error(), otherSrv.URL+"/steal") || !strings.Contains(out, "302") {
			t.Fatalf("err=%v output=%q, want the 302 and its Location named", err, out)
		}
		if n := other.count(); n != 0 {
			t.Fatalf("the other host got %d requests, want none", n)
		}
	})
	t.Run("SameOrigin307Followed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		var srv *httptest.Server
		rec, srv := redirector(t, http.StatusTemporaryRedirect, func() string { return srv.URL + "/moved" })
		j := mustHTTP(t, &http.Client{}, HTTPConfig{URL: srv.URL + "/hook", Headers: headers, FollowRedirects: true})
		if _, err := j.Execute(ctx, run); err != nil {
			t.Fatalf("Execute: %v", err)
		}
		req, body := rec.last(t)
		if req.Method != http.MethodPost || body != "" || req.URL.Path != "/moved" {
			t.Fatalf("followed as %s %s with body %q, want POST /moved with the same (empty) body", req.Method, req.URL.Path, body)
		}
		if req.Header.Get("X-Api-Key") != "k1" || req.Header.Get(HeaderFencingToken) != "9" || req.Header.Get(HeaderIdempotencyKey) != "hook@1" {
			t.Fatalf("headers after the redirect: %v", req.Header)
		}
	})
	t.Run("OtherOrigin307Fails", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		other, otherSrv := newService(t, http.StatusOK, "")
		_, srv := redirector(t, http.StatusTemporaryRedirect, func() string { return otherSrv.URL + "/steal" })
		j := mustHTTP(t, &http.Client{}, HTTPConfig{URL: srv.URL + "/hook", Headers: headers, FollowRedirects: true})
		_, err := j.Execute(ctx, run)
		if err == nil || !scheduler.IsPermanent(err) || !strings.Contains(err.Error(), "another origin") {
			t.Fatalf("err=%v, want a permanent failure naming another origin", err)
		}
		if n := other.count(); n != 0 {
			t.Fatalf("the other host got %d requests, want none", n)
		}
	})
	t.Run("SameOrigin302WouldBecomeGET", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		var srv *httptest.Server
		rec, srv := redirector(t, http.StatusFound, func() string { return srv.URL + "/moved" })
		j := mustHTTP(t, &http.Client{}, HTTPConfig{URL: srv.URL + "/hook", Headers: headers, FollowRedirects: true})
		_, err := j.Execute(ctx, run)
		if err == nil || !scheduler.IsPermanent(err) || !strings.Contains(err.Error(), "into a GET") {
			t.Fatalf("err=%v, want a permanent failure: the POST would become a GET", err)
		}
		if n := rec.count(); n != 0 {
			t.Fatalf("/moved got %d requests, want none", n)
		}
	})
	t.Run("SchemeChangeFails", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		var srv *httptest.Server
		_, srv = redirector(t, http.StatusPermanentRedirect, func() string { return strings.Replace(srv.URL, "http:", "https:", 1) + "/moved" })
		j := mustHTTP(t, &http.Client{}, HTTPConfig{URL: srv.URL + "/hook", FollowRedirects: true})
		if _, err := j.Execute(ctx, run); err == nil || !strings.Contains(err.Error(), "another origin") {
			t.Fatalf("err=%v, want http to https refused as another origin", err)
		}
	})
	t.Run("LoopStops", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		var srv *httptest.Server
		_, srv = redirector(t, http.StatusTemporaryRedirect, func() string { return srv.URL + "/again" })
		j := mustHTTP(t, &http.Client{}, HTTPConfig{URL: srv.URL + "/hook", FollowRedirects: true})
		if _, err := j.Execute(ctx, run); err == nil || !scheduler.IsPermanent(err) || !strings.Contains(err.Error(), "10 redirects in a row") {
			t.Fatalf("err=%v, want a permanent failure after 10 redirects", err)
		}
	})
	t.Run("NoLocation", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		_, srv := newService(t, http.StatusMultipleChoices, "pick one")
		j := mustHTTP(t, &http.Client{}, HTTPConfig{URL: srv.URL + "/hook", FollowRedirects: true})
		if _, err := j.Execute(ctx, run); err == nil || !scheduler.IsPermanent(err) || !strings.Contains(err.Error(), "a redirect without a Location") {
			t.Fatalf("err=%v, want a permanent failure naming the missing Location", err)
		}
	})
	t.Run("TLSStillVerified", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		t.Cleanup(srv.Close)
		j := mustHTTP(t, &http.Client{}, HTTPConfig{URL: srv.URL + "/hook", FollowRedirects: true})
		if _, err := j.Execute(ctx, run); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("err=%v, want a certificate error from a self-signed server", err)
		}
	})
}
