package status

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"scheduler"
)

// gatedSource is a Source whose every read waits for gate to close, counting the reads begun
// and the most in flight at once: what a flood of requests asks of the store and etcd.
type gatedSource struct {
	gate                         chan struct{}
	elections, fences, now, most atomic.Int64
}

func (g *gatedSource) enter() {
	n := g.now.Add(1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	<-g.gate
	g.now.Add(-1)
}

func (g *gatedSource) Election(context.Context, []scheduler.Replica) (Election, error) {
	g.elections.Add(1)
	g.enter()
	return Election{Leader: &Leader{Node: "a", Token: 7}}, nil
}

func (g *gatedSource) Replicas(context.Context) ([]scheduler.Replica, error) {
	g.enter()
	return nil, nil
}

func (g *gatedSource) Paused(context.Context) (map[string]bool, error) { g.enter(); return nil, nil }

func (g *gatedSource) Fences(context.Context, ...string) (map[string]int64, error) {
	g.fences.Add(1)
	g.enter()
	return nil, nil
}

func (g *gatedSource) Last(context.Context, ...string) (map[string]scheduler.Run, error) {
	g.enter()
	return nil, nil
}

// counted serves h, counting the requests that reached it.
func counted(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	})
}

// waitFor polls cond until it holds or the test's context ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestServer_FloodReadsTheStoreTwice: a flood of concurrent /status, /readyz and /api/console
// requests, all arrived while the store answers slowly, reads the store and etcd twice per
// document (the read the first request began, and the one all the others wait for), not once
// per request, at most one read of each document in flight, and every request gets its answer.
func TestServer_FloodReadsTheStoreTwice(t *testing.T) {
	const perPath = 40
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := &gatedSource{gate: make(chan struct{})}
	table := []Entry{{Name: "alpha", Schedule: "@hourly", Timezone: "UTC", Enabled: true}}
	s := newConsoleServer(t, src, fakeConsole{}, fakeDaemon{table: table}, "", nil)
	var arrived atomic.Int64
	srv := httptest.NewServer(counted(s.Handler(), &arrived))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 3 * perPath}}
	paths := []string{"/status", "/readyz", "/api/console"}
	var wg sync.WaitGroup
	codes := make(chan int, len(paths)*perPath)
	for _, p := range paths {
		for range perPath {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+p, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("GET %s: %v", p, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes <- resp.StatusCode
			})
		}
	}
	waitFor(ctx, t, "every request to arrive", func() bool { return arrived.Load() == int64(len(paths)*perPath) })
	close(src.gate)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Fatalf("a request answered %d, want 200", c)
		}
	}
	// Two reads of each document: the election by all three, the fences by /status and the console's.
	if e, f := src.elections.Load(), src.fences.Load(); e != 6 || f != 4 {
		t.Fatalf("%d requests read the election %d times and the fences %d times, want 6 and 4", len(paths)*perPath, e, f)
	}
	if m := src.most.Load(); m > int64(len(paths)) {
		t.Fatalf("%d reads in flight at once, want at most %d", m, len(paths))
	}
}

// TestServer_DocumentAfterAction: the document read after a console action shows its effect:
// the reads shared by concurrent requests never answer a request that came after them.
func TestServer_DocumentAfterAction(t *testing.T) {
	paused := false
	src := &fakeSource{paused: func() (map[string]bool, error) { return map[string]bool{"alpha": paused}, nil }}
	ctl := &fakeControl{}
	table := []Entry{{Name: "alpha", Schedule: "@hourly", Timezone: "UTC", Enabled: true}}
	s := newConsoleServer(t, src, fakeConsole{}, fakeDaemon{table: table}, "secret", ctl)
	if doc := statusOf(t, s); doc.Jobs[0].Paused {
		t.Fatal("alpha paused before the action")
	}
	paused = true // what the pause writes to the control state
	req := httptest.NewRequest("POST", "/api/jobs/alpha/pause", nil)
	req.Header.Set(ConsoleHeader, "1")
	req.Header.Set("Authorization", "Bearer secret")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("pause=%d %s", rec.Code, rec.Body)
	}
	if doc := statusOf(t, s); !doc.Jobs[0].Paused {
		t.Fatal("/status after the pause still shows alpha running")
	}
}

// TestServer_RunOutputStreamBounds: the run output streams open at once are bounded per
// client and in all; one past a bound is answered 503 with a Retry-After without reaching the
// run's output, and a stream closed makes room for another.
func TestServer_RunOutputStreamBounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var entered atomic.Int64
	out := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a run that prints nothing more
	})
	s, err := New(Config{Addr: "127.0.0.1:0", Explain: testExplain, RunOutput: out},
		&fakeSource{}, fakeDaemon{}, mustMetrics(t, "auto", "alpha"), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run=%v", err)
		}
	}()
	url := "http://" + s.Addr().String() + "/runs/42/output"
	// from returns a client whose connections come from 127.0.0.host.
	from := func(host int) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(host))}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	stream := func(c *http.Client) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			open = append(open, resp)
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp
	}
	refused := func(resp *http.Response, what string) {
		t.Helper()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: %d (Retry-After %q), want 503 with a Retry-After", what, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	first := from(1)
	for i := range maxStreamsPerClient {
		if resp := stream(first); resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d of one client: %d, want 200", i, resp.StatusCode)
		}
	}
	refused(stream(first), "one stream past the client's bound")
	for host := 2; len(open) < maxStreams; host++ {
		c := from(host)
		for i := 0; i < maxStreamsPerClient && len(open) < maxStreams; i++ {
			if resp := stream(c); resp.StatusCode != http.StatusOK {
				t.Fatalf("stream %d of client %d: %d, want 200", len(open), host, resp.StatusCode)
			}
		}
	}
	refused(stream(from(200)), "a new client's stream past the server's bound")
	if n := entered.Load(); n != maxStreams {
		t.Fatalf("%d streams reached the run's output, want %d", n, maxStreams)
	}
	open[0].Body.Close() // one of the first client's
	open = open[1:]
	waitFor(ctx, t, "room for a stream once one closed", func() bool {
		return stream(first).StatusCode == http.StatusOK
	})
}

// gatedCollector is a collector whose Collect waits for gate, counting the calls.
type gatedCollector struct {
	gate  chan struct{}
	calls atomic.Int64
	desc  *prometheus.Desc
}

func (c *gatedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *gatedCollector) Collect(ch chan<- prometheus.Metric) {
	c.calls.Add(1)
	<-c.gate
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}

// TestServer_MetricsScrapesBounded: scrapes in flight at once are bounded (each reads the
// store through the outbox's gauges); those past the bound are answered 503 at once.
func TestServer_MetricsScrapesBounded(t *testing.T) {
	const scrapes = 20
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newTestServer(t, &fakeSource{}, fakeDaemon{})
	col := &gatedCollector{gate: make(chan struct{}), desc: prometheus.NewDesc("test_gated", "A collector that waits.", nil, nil)}
	s.m.Registry().MustRegister(col)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	var refused atomic.Int64
	var wg sync.WaitGroup
	for range scrapes {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/metrics", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("scrape: %v", err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				refused.Add(1)
			}
		})
	}
	waitFor(ctx, t, "every scrape to be collected or refused", func() bool { return col.calls.Load()+refused.Load() == scrapes })
	calls := col.calls.Load()
	close(col.gate)
	wg.Wait()
	if calls > metricsInFlight {
		t.Fatalf("%d of %d scrapes collected at once, want at most %d", calls, scrapes, metricsInFlight)
	}
	if got := refused.Load(); got != scrapes-calls {
		t.Fatalf("%d scrapes refused, want %d", got, scrapes-calls)
	}
}
