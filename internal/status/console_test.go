package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
)

// fakeConsole is a ConsoleSource of func fields; a nil field answers with nothing.
type fakeConsole struct {
	history func(job string) ([]scheduler.Run, error)
	outbox  func(st scheduler.MessageStatus) ([]scheduler.Message, error)
	pauses  func() (map[string]Pause, error)
}

func (f fakeConsole) History(_ context.Context, job string, _ int) ([]scheduler.Run, error) {
	if f.history == nil {
		return nil, nil
	}
	return f.history(job)
}

func (f fakeConsole) Outbox(_ context.Context, st scheduler.MessageStatus, _ int) ([]scheduler.Message, error) {
	if f.outbox == nil {
		return nil, nil
	}
	return f.outbox(st)
}

func (f fakeConsole) Pauses(context.Context) (map[string]Pause, error) {
	if f.pauses == nil {
		return nil, nil
	}
	return f.pauses()
}

// fakeControl records the actions it is asked for; jobs, when set, is the cluster's table its
// Check reads.
type fakeControl struct {
	calls []string
	jobs  []string
}

func (f *fakeControl) Check(_ context.Context, job string) error {
	if f.jobs != nil && !slices.Contains(f.jobs, job) {
		return fmt.Errorf("no job named %q in the leader's table (node b)", job)
	}
	return nil
}

func (f *fakeControl) Pause(_ context.Context, job, by string) (bool, error) {
	f.calls = append(f.calls, "pause "+job+" "+by)
	return true, nil
}

func (f *fakeControl) Resume(_ context.Context, job string) (bool, error) {
	f.calls = append(f.calls, "resume "+job)
	return true, nil
}

func (f *fakeControl) Trigger(_ context.Context, job, by string, at time.Time) (time.Time, error) {
	f.calls = append(f.calls, "trigger "+job+" "+by)
	return at, nil
}

// newConsoleServer returns a server with the console of cs, its actions enabled by token
// (none when empty).
func newConsoleServer(t *testing.T, src Source, cs ConsoleSource, d Daemon, token string, ctl Control) *Server {
	t.Helper()
	s, err := New(Config{Addr: "127.0.0.1:0", Explain: testExplain, Now: func() time.Time { return testNow },
		Console: cs, Node: "a", AdminToken: token, Control: ctl}, src, d, mustMetrics(t, "auto", "alpha"), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.ln.Close() })
	return s
}

func TestServer_ConsoleFiles(t *testing.T) {
	s := newConsoleServer(t, &fakeSource{}, fakeConsole{}, fakeDaemon{}, "", nil)
	for path, ctype := range map[string]string{
		"/":                    "text/html",
		"/console/console.js":  "text/javascript",
		"/console/console.css": "text/css",
		"/api/console":         "application/json",
	} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		h := rec.Header()
		if rec.Code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), ctype) {
			t.Errorf("%s=%d %s, want 200 %s", path, rec.Code, h.Get("Content-Type"), ctype)
		}
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: Content-Security-Policy %q allows inline or evaluated script", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: X-Content-Type-Options=%q X-Frame-Options=%q, want nosniff and DENY", path, h.Get("X-Content-Type-Options"), h.Get("X-Frame-Options"))
		}
	}
	for _, path := range []string{"/console/missing.js", "/console/", "/nope"} {
		if code, _ := get(s, path); code != http.StatusNotFound {
			t.Errorf("%s=%d, want 404", path, code)
		}
	}
	t.Run("NotConfigured", func(t *testing.T) {
		if code, _ := get(newTestServer(t, &fakeSource{}, fakeDaemon{}), "/"); code != http.StatusNotFound {
			t.Fatalf("/ without a console=%d, want 404", code)
		}
	})
	t.Run("TokenNeedsControl", func(t *testing.T) {
		_, err := New(Config{Addr: "127.0.0.1:0", Explain: testExplain, Console: fakeConsole{}, AdminToken: "x"},
			&fakeSource{}, fakeDaemon{}, mustMetrics(t, "auto"), zaptest.NewLogger(t))
		if err == nil {
			t.Fatal("New accepted an admin token without a control")
		}
	})
}

// TestConsole_PageLetsNoDataRun keeps the page's files free of what would let a job's output
// run as code: no inline script or handler, and no markup built from strings in the script.
func TestConsole_PageLetsNoDataRun(t *testing.T) {
	html, err := consoleFiles.ReadFile("console/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]+</script>`), regexp.MustCompile(`(?i)\son[a-z]+\s*=`), regexp.MustCompile(`(?i)\sstyle\s*=`)} {
		if m := re.Find(html); m != nil {
			t.Errorf("index.html has %q: inline code or style, which the policy refuses", m)
		}
	}
	js, err := consoleFiles.ReadFile("console/console.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("console.js uses %s: data must enter the page as text", sink)
		}
	}
}

func TestCollectConsole(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	started := now.Add(-time.Hour)
	finished := started.Add(1250 * time.Millisecond)
	table := []Entry{
		{Name: "alpha", Schedule: "30 2 * * *", Timezone: "Europe/Berlin", Enabled: true, Words: "at 02:30 every day",
			Slots: func(after time.Time, n int) []Slot {
				return []Slot{
					{At: time.Date(2026, 3, 28, 2, 30, 0, 0, berlin), Nominal: "2026-03-28 02:30:00"},
					{At: time.Date(2026, 3, 29, 3, 0, 0, 0, berlin), Nominal: "2026-03-29 02:30:00", Adjusted: true},
				}[:min(n, 2)]
			}},
		{Name: "beta", Schedule: "0 1-5/2 * * *", Timezone: "UTC", Enabled: false,
			Slots: func(time.Time, int) []Slot { t.Error("slots of a disabled job computed"); return nil }},
	}
	src := &fakeSource{
		election: leading(7, nil),
		replicas: func() ([]scheduler.Replica, error) {
			return []scheduler.Replica{{Node: "a", TableHash: "h2"}, {Node: "b", TableHash: "h1"}, {Node: "c", TableHash: "h1"}}, nil
		},
		paused: func() (map[string]bool, error) { return map[string]bool{"beta": true}, nil },
	}
	cs := fakeConsole{
		history: func(job string) ([]scheduler.Run, error) {
			if job != "alpha" {
				return nil, errors.New("down")
			}
			return []scheduler.Run{{Job: "alpha", Status: scheduler.StatusFailed, Reason: "<b>x</b>", StartedAt: &started, FinishedAt: &finished}}, nil
		},
		outbox: func(st scheduler.MessageStatus) ([]scheduler.Message, error) {
			return []scheduler.Message{{Key: "k-" + string(st), Status: st, Body: "secret body"}}, nil
		},
		pauses: func() (map[string]Pause, error) {
			return map[string]Pause{"beta": {By: "console@10.0.0.1", At: now}}, nil
		},
	}
	doc := CollectConsole(context.Background(), src, cs, testExplain, table, now)
	a, b := doc.Jobs[0], doc.Jobs[1]
	if a.Words != "at 02:30 every day" || b.Words != "0 1-5/2 * * *" {
		t.Errorf("words %q, %q, want the description and the expression", a.Words, b.Words)
	}
	if len(a.Slots) != 2 || a.Slots[0].DST != "" || !strings.Contains(a.Slots[1].DST, "moved by a DST change") || a.Slots[1].Zone != "CEST" {
		t.Errorf("alpha's slots %+v, want the second marked moved, in CEST", a.Slots)
	}
	if len(b.Slots) != 0 || b.Slots == nil {
		t.Errorf("beta's slots %v, want an empty list (disabled)", b.Slots)
	}
	if len(a.Runs) != 1 || a.Runs[0].Duration != "1.25s" || a.Runs[0].Reason != "<b>x</b>" {
		t.Errorf("alpha's runs %+v, want one of 1.25s with its reason as given", a.Runs)
	}
	if b.PausedBy == nil || b.PausedBy.By != "console@10.0.0.1" || a.PausedBy != nil {
		t.Errorf("paused by: alpha %+v beta %+v, want beta's record only", a.PausedBy, b.PausedBy)
	}
	if !hasWarning(doc.Doc, "read the runs of beta from the store: down") {
		t.Errorf("warnings %q, want beta's unreadable runs", doc.Warnings)
	}
	if len(doc.Outbox.Pending) != 1 || doc.Outbox.Pending[0].Key != "k-pending" || len(doc.Outbox.Dead) != 1 || doc.Outbox.Dead[0].Key != "k-dead" {
		t.Errorf("outbox %+v, want one pending and one dead message", doc.Outbox)
	}
	// The leader, a, runs h2: the others differ from it although they are more.
	for i, want := range []bool{false, true, true} {
		if r := doc.Replicas[i]; r.TableDiffers != want || r.Leads != (i == 0) {
			t.Errorf("replica %s: differs=%t leads=%t, want %t and %t", r.Node, r.TableDiffers, r.Leads, want, i == 0)
		}
	}
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "secret body") {
		t.Error("the console's document carries a message body")
	}
	for _, key := range []string{`"leader":`, `"jobs":`, `"words":`, `"slots":`, `"runs":`, `"outbox":`, `"table_differs":`, `"admin":`} {
		if !strings.Contains(string(body), key) {
			t.Errorf("the document lacks %s", key)
		}
	}

	t.Run("NoLeaderMostReplicasWin", func(t *testing.T) {
		rs := compareTables(nil, []scheduler.Replica{{Node: "a", TableHash: "h2"}, {Node: "b", TableHash: "h1"}, {Node: "c", TableHash: "h1"}})
		if !rs[0].TableDiffers || rs[1].TableDiffers || rs[2].TableDiffers {
			t.Fatalf("replicas %+v, want a flagged", rs)
		}
	})
	t.Run("LargeTable", func(t *testing.T) {
		big := make([]Entry, consoleDetailJobs+1)
		asked := 0
		for i := range big {
			big[i] = Entry{Name: fmt.Sprintf("job%d", i), Enabled: true}
		}
		cs := fakeConsole{history: func(string) ([]scheduler.Run, error) { asked++; return nil, nil }}
		doc := CollectConsole(context.Background(), &fakeSource{}, cs, testExplain, big, now)
		if asked != consoleDetailJobs || len(doc.Jobs) != len(big) || !hasWarning(doc.Doc, "the first 100 of 101 jobs") {
			t.Fatalf("history read for %d jobs, %d jobs shown, warnings %q; want %d, all, and a warning", asked, len(doc.Jobs), doc.Warnings, consoleDetailJobs)
		}
	})
}

func TestServer_ConsoleActions(t *testing.T) {
	const token = "0123456789abcdef0123"
	table := []Entry{{Name: "alpha", Enabled: true}}
	ctl := &fakeControl{}
	s := newConsoleServer(t, &fakeSource{}, fakeConsole{}, fakeDaemon{table: table}, token, ctl)
	send := func(path string, h map[string]string) int {
		req := httptest.NewRequest("POST", path, strings.NewReader("{}"))
		req.RemoteAddr = "192.0.2.1:5555"
		for k, v := range h {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	ok := map[string]string{"Authorization": "Bearer " + token, ConsoleHeader: "1", "Content-Type": "application/json"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range ok {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	for _, tc := range []struct {
		name string
		h    map[string]string
		want int
	}{
		{"NoHeader", with(ConsoleHeader, ""), http.StatusForbidden},
		{"Multipart", with("Content-Type", "multipart/form-data; boundary=x"), http.StatusForbidden},
		{"SameSite", with("Sec-Fetch-Site", "same-site"), http.StatusForbidden},
		{"WrongToken", with("Authorization", "Bearer 0123456789abcdef0124"), http.StatusUnauthorized},
		{"LongerToken", with("Authorization", "Bearer "+token+"0"), http.StatusUnauthorized},
		{"NoScheme", with("Authorization", token), http.StatusUnauthorized},
		{"OtherScheme", with("Authorization", "Basic "+token), http.StatusUnauthorized},
		{"NoToken", with("Authorization", "Bearer "), http.StatusUnauthorized},
	} {
		if code := send("/api/jobs/alpha/pause", tc.h); code != tc.want {
			t.Errorf("%s=%d, want %d", tc.name, code, tc.want)
		}
	}
	if len(ctl.calls) != 0 {
		t.Fatalf("refused requests reached the control: %v", ctl.calls)
	}
	for _, action := range []string{"pause", "resume", "trigger"} {
		if code := send("/api/jobs/alpha/"+action, ok); code != http.StatusOK {
			t.Errorf("%s=%d, want 200", action, code)
		}
	}
	want := []string{"pause alpha console@192.0.2.1", "resume alpha", "trigger alpha console@192.0.2.1"}
	if fmt.Sprint(ctl.calls) != fmt.Sprint(want) {
		t.Fatalf("control calls %q, want %q", ctl.calls, want)
	}
	// The scheme's name is case-insensitive, and more than one space may follow it.
	for _, h := range []string{"bearer " + token, "BEARER  " + token} {
		if code := send("/api/jobs/alpha/resume", with("Authorization", h)); code != http.StatusOK {
			t.Errorf("Authorization %q=%d, want 200", h[:8], code)
		}
	}
	if code, _ := get(s, "/api/jobs/alpha/pause"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET of an action=%d, want 405", code)
	}
}
