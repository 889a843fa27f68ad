package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
)

// fakeSource is a Source of func fields; a nil field answers with nothing.
type fakeSource struct {
	election func(rs []scheduler.Replica) (Election, error)
	replicas func() ([]scheduler.Replica, error)
	paused   func() (map[string]bool, error)
	fences   func() (map[string]int64, error)
	last     func() (map[string]scheduler.Run, error)
	reads    int // calls of Election
}

func (f *fakeSource) Election(_ context.Context, rs []scheduler.Replica) (Election, error) {
	f.reads++
	if f.election == nil {
		return Election{}, nil
	}
	return f.election(rs)
}

func (f *fakeSource) Replicas(context.Context) ([]scheduler.Replica, error) {
	if f.replicas == nil {
		return nil, nil
	}
	return f.replicas()
}

func (f *fakeSource) Paused(context.Context) (map[string]bool, error) {
	if f.paused == nil {
		return nil, nil
	}
	return f.paused()
}

func (f *fakeSource) Fences(context.Context, ...string) (map[string]int64, error) {
	if f.fences == nil {
		return nil, nil
	}
	return f.fences()
}

func (f *fakeSource) Last(context.Context, ...string) (map[string]scheduler.Run, error) {
	if f.last == nil {
		return nil, nil
	}
	return f.last()
}

// fakeDaemon is a Daemon of fixed answers.
type fakeDaemon struct {
	table   []Entry
	blocked []string
	schema  error
}

func (d fakeDaemon) Table() []Entry                    { return d.table }
func (d fakeDaemon) Blocked() []string                 { return d.blocked }
func (d fakeDaemon) CheckSchema(context.Context) error { return d.schema }

var testExplain = Explain{
	Blocked: func(job string, token, fence int64) string {
		return fmt.Sprintf("%s blocked: fence %d > %d", job, fence, token)
	},
	Held: func(job string, token int64) string { return fmt.Sprintf("%s held below %d", job, token) },
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newTestServer returns a server of src and d on a free loopback port.
func newTestServer(t *testing.T, src Source, d Daemon) *Server {
	t.Helper()
	s, err := New(Config{Addr: "127.0.0.1:0", Explain: testExplain, Now: func() time.Time { return testNow }},
		src, d, mustMetrics(t, "auto", "alpha"), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.ln.Close() })
	return s
}

// get serves one request to path with s's handler.
func get(s *Server, path string) (int, string) {
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String()
}

func leading(token int64, since *time.Time) func([]scheduler.Replica) (Election, error) {
	return func([]scheduler.Replica) (Election, error) {
		return Election{Leader: &Leader{Node: "a", Token: token, Since: since}}, nil
	}
}

func TestServer_Readyz(t *testing.T) {
	down := errors.New("connection refused")
	for _, tc := range []struct {
		name string
		src  *fakeSource
		d    fakeDaemon
		want string // in the body of the 503; "" for ready
	}{
		{"Ready", &fakeSource{election: leading(7, nil)}, fakeDaemon{}, ""},
		{"ReplicasUnreadable", &fakeSource{replicas: func() ([]scheduler.Replica, error) { return nil, down }}, fakeDaemon{}, "etcd: read the replicas: connection refused"},
		{"EtcdDown", &fakeSource{election: func([]scheduler.Replica) (Election, error) { return Election{}, down }}, fakeDaemon{}, "etcd: connection refused"},
		{"ElectionProblem", &fakeSource{election: func([]scheduler.Replica) (Election, error) {
			return Election{Problems: []string{"lease-less key /p/x"}}, nil
		}}, fakeDaemon{}, "election: lease-less key /p/x"},
		{"SchemaBehind", &fakeSource{}, fakeDaemon{schema: errors.New("schema at 3, want 4")}, "store: schema at 3, want 4"},
		{"JobBlocked", &fakeSource{}, fakeDaemon{blocked: []string{"job \"alpha\" is blocked"}}, "job \"alpha\" is blocked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(newTestServer(t, tc.src, tc.d), "/readyz")
			switch {
			case tc.want == "" && code != http.StatusOK:
				t.Fatalf("readyz=%d %s, want 200", code, body)
			case tc.want != "" && (code != http.StatusServiceUnavailable || !strings.Contains(body, tc.want)):
				t.Fatalf("readyz=%d %q, want 503 saying %q", code, body, tc.want)
			}
			if tc.src.reads != 1 {
				t.Fatalf("election reads=%d, want 1", tc.src.reads)
			}
		})
	}
	t.Run("ReplicasKnownToTheElection", func(t *testing.T) {
		var got []scheduler.Replica
		src := &fakeSource{
			replicas: func() ([]scheduler.Replica, error) { return []scheduler.Replica{{Node: "a"}}, nil },
			election: func(rs []scheduler.Replica) (Election, error) { got = rs; return Election{}, nil },
		}
		get(newTestServer(t, src, fakeDaemon{}), "/readyz")
		if len(got) != 1 || got[0].Node != "a" {
			t.Fatalf("replicas given to the election=%v, want [a]", got)
		}
	})
}

func TestServer_Status(t *testing.T) {
	since := testNow.Add(-10 * time.Second)
	long := testNow.Add(-time.Hour)
	next := func(now time.Time) time.Time { return now.Add(time.Hour) }
	table := []Entry{
		{Name: "alpha", Schedule: "@hourly", Timezone: "UTC", Enabled: true, Next: next},
		{Name: "beta", Schedule: "@hourly", Timezone: "UTC", Enabled: false, Next: next},
	}
	t.Run("Document", func(t *testing.T) {
		src := &fakeSource{
			election: leading(7, &since),
			replicas: func() ([]scheduler.Replica, error) {
				return []scheduler.Replica{{Node: "a", TableHash: "h1"}, {Node: "b", TableHash: "h2"}}, nil
			},
			paused: func() (map[string]bool, error) { return map[string]bool{"beta": true}, nil },
			fences: func() (map[string]int64, error) { return map[string]int64{"alpha": 9, "beta": 7}, nil },
			last: func() (map[string]scheduler.Run, error) {
				return map[string]scheduler.Run{"alpha": {Job: "alpha", Status: scheduler.StatusSucceeded, Token: 7}}, nil
			},
		}
		doc := statusOf(t, newTestServer(t, src, fakeDaemon{table: table}))
		if doc.Leader == nil || doc.Leader.Token != 7 || doc.Leader.Since == nil || !doc.Leader.Since.Equal(since) {
			t.Fatalf("leader=%+v, want a at token 7 since %s", doc.Leader, since)
		}
		a, b := doc.Jobs[0], doc.Jobs[1]
		if a.Blocked == nil || a.Blocked.Fence != 9 || a.Blocked.Held || a.Last == nil || a.Next == nil || !a.Next.Equal(testNow.Add(time.Hour)) {
			t.Fatalf("alpha=%+v, want blocked by fence 9, its last run and its next slot", a)
		}
		if b.Blocked != nil || !b.Paused || b.Next != nil {
			t.Fatalf("beta=%+v, want paused, not blocked, no next slot (disabled)", b)
		}
		if !hasWarning(doc, "replicas run different job tables (h1: a; h2: b)") || !hasWarning(doc, "alpha blocked: fence 9 > 7") {
			t.Fatalf("warnings=%q, want the table split and alpha's block", doc.Warnings)
		}
	})
	t.Run("Held", func(t *testing.T) {
		src := &fakeSource{election: leading(7, &long), fences: func() (map[string]int64, error) { return map[string]int64{"alpha": 5}, nil }}
		doc := statusOf(t, newTestServer(t, src, fakeDaemon{table: table[:1]}))
		if bl := doc.Jobs[0].Blocked; bl == nil || !bl.Held || bl.Reason != "alpha held below 7" {
			t.Fatalf("alpha blocked=%+v, want held below 7", bl)
		}
		src.election = leading(7, &since)
		if bl := statusOf(t, newTestServer(t, src, fakeDaemon{table: table[:1]})).Jobs[0].Blocked; bl != nil {
			t.Fatalf("alpha blocked=%+v within HeldAfter of the takeover, want nil", bl)
		}
	})
	t.Run("NothingReadable", func(t *testing.T) {
		down := errors.New("down")
		src := &fakeSource{
			election: func(rs []scheduler.Replica) (Election, error) {
				if rs != nil {
					t.Errorf("replicas given to the election=%v, want nil (not known)", rs)
				}
				return Election{}, down
			},
			replicas: func() ([]scheduler.Replica, error) { return nil, down },
			paused:   func() (map[string]bool, error) { return nil, down },
			fences:   func() (map[string]int64, error) { return nil, down },
			last:     func() (map[string]scheduler.Run, error) { return nil, down },
		}
		doc := statusOf(t, newTestServer(t, src, fakeDaemon{table: table}))
		for _, w := range []string{"read the fences from the store: down", "read the replicas from etcd: down",
			"read the leader from etcd: down", "read paused jobs from etcd: down", "read the last runs from the store: down"} {
			if !hasWarning(doc, w) {
				t.Errorf("no warning %q in %q", w, doc.Warnings)
			}
		}
		if doc.Leader != nil || len(doc.Jobs) != 2 || doc.Replicas == nil || doc.Leaseless == nil {
			t.Fatalf("doc=%+v, want no leader, both jobs, empty lists", doc)
		}
	})
	t.Run("NoLeader", func(t *testing.T) {
		src := &fakeSource{election: func([]scheduler.Replica) (Election, error) {
			return Election{Leaseless: []LeaselessKey{{Key: "/p/x"}}, Problems: []string{"lease-less key /p/x"}}, nil
		}}
		doc := statusOf(t, newTestServer(t, src, fakeDaemon{}))
		if doc.Leader != nil || len(doc.Leaseless) != 1 || !hasWarning(doc, "no replica leads") || !hasWarning(doc, "lease-less key /p/x") {
			t.Fatalf("doc=%+v, want no leader, the key and its warning", doc)
		}
	})
}

// statusOf reads /status from s.
func statusOf(t *testing.T, s *Server) Doc {
	t.Helper()
	code, body := get(s, "/status")
	if code != http.StatusOK {
		t.Fatalf("status=%d %s", code, body)
	}
	var doc Doc
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return doc
}

func hasWarning(doc Doc, part string) bool {
	for _, w := range doc.Warnings {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

func TestServer_Run(t *testing.T) {
	s := newTestServer(t, &fakeSource{}, fakeDaemon{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	for path, want := range map[string]string{"/healthz": "ok", "/metrics": "scheduler_is_leader 0", "/status": `"leader": null`} {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.Addr().String()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Errorf("%s=%q, want %q in it", path, b, want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run=%v after its context ended, want nil", err)
	}
}

func TestNew_Refuses(t *testing.T) {
	m := mustMetrics(t, "auto")
	lg := zaptest.NewLogger(t)
	taken := newTestServer(t, &fakeSource{}, fakeDaemon{})
	for name, tc := range map[string]struct {
		cfg Config
		src Source
	}{
		"AddressInUse":   {Config{Addr: taken.Addr().String(), Explain: testExplain}, &fakeSource{}},
		"NoExplanations": {Config{Addr: "127.0.0.1:0"}, &fakeSource{}},
		"NoSource":       {Config{Addr: "127.0.0.1:0", Explain: testExplain}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			if s, err := New(tc.cfg, tc.src, fakeDaemon{}, m, lg); err == nil {
				s.ln.Close()
				t.Fatal("New: no error")
			}
		})
	}
}

func TestServer_RunFailsWhenServingFails(t *testing.T) {
	s := newTestServer(t, &fakeSource{}, fakeDaemon{})
	s.ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Run(ctx); err == nil || !strings.Contains(err.Error(), "serve http on") {
		t.Fatalf("Run on a closed listener=%v, want the serve error", err)
	}
}
