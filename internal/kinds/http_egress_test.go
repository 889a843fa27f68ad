package kinds

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"scheduler/internal/testenv/rawhttp"
)

// TestHTTPJob_SentOncePerAttempt: a receiver that reads the request and then resets the
// connection gets it once per attempt, even while other jobs of the same client have left
// connections to it open. net/http's own transport sent a request with an Idempotency-Key again
// on each idle connection it had.
func TestHTTPJob_SentOncePerAttempt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	r := rawhttp.StartReceiver(t)
	client := &http.Client{} // as the daemon builds it
	warm := mustHTTP(t, client, HTTPConfig{URL: r.URL + "/ok"})
	dup := mustHTTP(t, client, HTTPConfig{URL: r.URL + "/reset"})
	for round := range 5 {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := warm.Execute(ctx, testRun()); err != nil {
					t.Errorf("warm-up call: %v", err)
				}
			})
		}
		wg.Wait()
		run := testRun()
		run.RunID = fmt.Sprintf("dup@%d", round)
		if _, err := dup.Execute(ctx, run); err == nil {
			t.Fatal("a request whose connection was reset succeeded")
		}
		if n := r.Count("/reset", run.RunID); n != 1 {
			t.Fatalf("round %d: the receiver got the attempt's request %d times, want once", round, n)
		}
	}
}

// TestHTTPJob_ReplyBounded: a reply's headers are read up to egress.MaxHeaderBytes, not
// net/http's 10 MB; and the error of a followed redirect whose next request fails names the
// receiver's target cut short, not whole in every log line of the run.
func TestHTTPJob_ReplyBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	r := rawhttp.StartReceiver(t)
	if _, err := mustHTTP(t, &http.Client{}, HTTPConfig{URL: r.URL + "/headers"}).Execute(ctx, testRun()); err == nil {
		t.Fatal("a reply with about 200 KiB of headers was read")
	}
	_, err := mustHTTP(t, &http.Client{}, HTTPConfig{URL: r.URL + "/far", FollowRedirects: true}).Execute(ctx, testRun())
	if err == nil || len(err.Error()) > 2*maxLocation {
		t.Fatalf("the followed redirect's error is %d bytes, want at most %d: %.300v", len(err.Error()), 2*maxLocation, err)
	}
}
