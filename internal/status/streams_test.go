package status

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// TestServer_RunOutputStreams: /runs/{id}/output is served by Config.RunOutput, and a stream
// still open when the server shuts down ends then, rather than holding the shutdown.
func TestServer_RunOutputStreams(t *testing.T) {
	entered := make(chan string, 1)
	ended := make(chan struct{})
	out := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		entered <- r.PathValue("id")
		<-r.Context().Done() // a run that prints nothing more
		close(ended)
	})
	s, err := New(Config{Addr: "127.0.0.1:0", Explain: testExplain, RunOutput: out},
		&fakeSource{}, fakeDaemon{}, mustMetrics(t, "auto", "alpha"), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.Addr().String()+"/runs/42/output", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if id := <-entered; id != "42" {
		t.Fatalf("handler got run %q, want 42", id)
	}
	stop()
	select {
	case <-ended:
	case <-time.After(shutdownTimeout): // the shutdown would give up on it now, and leave it
		t.Fatal("the stream did not end with the shutdown")
	}
	if err := <-done; err != nil {
		t.Fatalf("Run=%v, want nil", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
}
