package view

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"scheduler/internal/status"
)

func TestDiff(t *testing.T) {
	leader := []status.TableJob{{Name: "a", Digest: "1"}, {Name: "b", Digest: "2"}, {Name: "c", Digest: "3"}}
	for _, tc := range []struct {
		name  string
		local []status.TableJob
		want  string
	}{
		{"Same", []status.TableJob{{Name: "c", Digest: "3"}, {Name: "a", Digest: "1"}, {Name: "b", Digest: "2"}}, ""},
		{"Older", []status.TableJob{{Name: "a", Digest: "1"}}, "only the leader has b, c"},
		{"Newer", append(leader[:3:3], status.TableJob{Name: "d"}), "only the file has d"},
		{"Changed", []status.TableJob{{Name: "a", Digest: "9"}, {Name: "b", Digest: "2"}, {Name: "c", Digest: "3"}}, "configured differently a"},
		{"All", []status.TableJob{{Name: "a", Digest: "9"}, {Name: "x"}}, "only the leader has b, c; only the file has x; configured differently a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff(tc.local, leader); got != tc.want {
				t.Errorf("tableDiff=%q, want %q", got, tc.want)
			}
		})
	}
	t.Run("ManyAreCounted", func(t *testing.T) {
		var local []status.TableJob
		for i := range 25 {
			local = append(local, status.TableJob{Name: fmt.Sprintf("j%02d", i)})
		}
		if got := Diff(local, nil); !strings.HasSuffix(got, "j09 and 15 more") {
			t.Errorf("tableDiff=%q, want ten names and a count", got)
		}
	})
}

func TestDialAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "127.0.0.1:8080",
		"0.0.0.0:8080":   "node-a:8080",
		"[::]:8080":      "node-a:8080",
		":8080":          "node-a:8080",
		"10.0.0.5:80":    "10.0.0.5:80",
		"not an address": "not an address",
	} {
		if got := DialAddr(addr, "node-a"); got != want {
			t.Errorf("DialAddr(%q)=%q, want %q", addr, got, want)
		}
	}
}

// TestFetch reads tables from real HTTP servers: a replica's answer, and what a server
// that a hand-written registry entry names may answer instead.
func TestFetch(t *testing.T) {
	serve := func(t *testing.T, h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.Run("ReadsTheTable", func(t *testing.T) {
		addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/table" {
				http.NotFound(w, r)
				return
			}
			_ = json.NewEncoder(w).Encode(status.TableDoc{Jobs: []status.TableJob{{Name: "a", Schedule: "@daily", Timezone: "UTC", Enabled: true}}})
		})
		jobs, err := Fetch(ctx, addr)
		if err != nil || len(jobs) != 1 || jobs[0].Name != "a" {
			t.Fatalf("jobs=%+v err=%v", jobs, err)
		}
	})
	for name, tc := range map[string]struct {
		h    http.HandlerFunc
		want string
	}{
		"OlderVersion": {func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "does not serve its table"},
		"ServerError":  {func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", 500) }, "500"},
		"NotJSON":      {func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>") }, "not a table"},
		"BadName": {func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"jobs":[{"name":"a\u001b[2J"}]}`)
		}, "no job of a valid table"},
		"ControlCharacters": {func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"jobs":[{"name":"a","schedule":"\u001b]0;x\u0007"}]}`)
		}, "no job of a valid table"},
	} {
		t.Run("Refuses/"+name, func(t *testing.T) {
			_, err := Fetch(ctx, serve(t, tc.h))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err=%v, want one saying %q", err, tc.want)
			}
		})
	}
	t.Run("Refuses/NoServer", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		addr := strings.TrimPrefix(srv.URL, "http://")
		srv.Close()
		if _, err := Fetch(ctx, addr); err == nil || !strings.Contains(err.Error(), "read its table") {
			t.Fatalf("err=%v, want a failed read from a closed server", err)
		}
	})
}

// TestFetch_HundredThousandJobs reads the table of the largest configuration, as a
// replica serves it, over a real HTTP server: every job arrives, well within MaxTableBytes.
func TestFetch_HundredThousandJobs(t *testing.T) {
	next := time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
	entries := make([]status.Entry, 100_000)
	for i := range entries {
		entries[i] = status.Entry{Name: fmt.Sprintf("job-%06d", i), Schedule: "*/5 * * * *", Timezone: "America/New_York",
			Enabled: true, Digest: "0123456789ab", Next: func(time.Time) time.Time { return next }}
	}
	var size int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b, err := json.Marshal(status.TableDoc{Jobs: status.TableJobs(entries, next)})
		if err != nil {
			t.Error(err)
		}
		size = len(b)
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	jobs, err := Fetch(ctx, strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != len(entries) || jobs[len(jobs)-1].Name != "job-099999" {
		t.Fatalf("read %d jobs, want %d", len(jobs), len(entries))
	}
	if size*4 > MaxTableBytes {
		t.Errorf("the table of %d jobs is %d bytes, too near the limit of %d", len(entries), size, MaxTableBytes)
	}
	t.Logf("%d jobs: %d bytes, served and read in %s", len(jobs), size, time.Since(start).Round(time.Millisecond))
}
