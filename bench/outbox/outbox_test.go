// Package outbox measures the outbox's dispatcher beside a job that sends its e-mails and
// webhooks itself: a job bills n clients, one fenced transaction per invoice on a throwaway
// Postgres, and either queues each invoice's message in that transaction (send=outbox, the
// dispatcher of one term running beside it with the daemon's defaults) or delivers it right
// after the commit (send=direct, outside the fence). The receivers are a real SMTP server and a
// real HTTP server on loopback. Reported: the job's own duration, messages delivered per second
// (from the first commit to the last acceptance, and from the first acceptance to the last:
// the drain rate), and the delay from each invoice's commit to
// its message's acceptance, p50 and p99.
//
//	go test -run '^$' -bench Outbox -benchtime 1x -timeout 30m ./bench/outbox/ [-args -outbox.n=600,60000]
package outbox

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"scheduler"
	ob "scheduler/internal/outbox"
	"scheduler/internal/testenv"
)

var sizes = flag.String("outbox.n", "600", "comma-separated numbers of messages per case")

func TestMain(m *testing.M) { testenv.Main(m) }

// receiver records when it accepted each message, by key.
type receiver struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (r *receiver) accepted(key string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.at[key]; !ok {
		r.at[key] = at
	}
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.at)
}

func BenchmarkOutbox(b *testing.B) {
	var ns []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("-outbox.n: %q", f)
		}
		ns = append(ns, n)
	}
	for _, n := range ns {
		for _, recv := range []string{"smtp", "http"} {
			for _, send := range []string{"outbox", "direct"} {
				b.Run(fmt.Sprintf("n=%d/receiver=%s/send=%s", n, recv, send), func(b *testing.B) {
					for range b.N {
						runCase(b, n, recv, send)
					}
				})
			}
		}
	}
}

func runCase(b *testing.B, n int, recv, send string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	const job, token = "invoices", 1
	store := openStore(ctx, b, job, token)
	defer store.Close()

	rc := &receiver{at: map[string]time.Time{}}
	var (
		kind scheduler.MessageKind
		dest string
		dl   ob.Deliverer
	)
	switch recv {
	case "smtp":
		srv := testenv.MustSMTP(b, testenv.SMTPOptions{})
		s, err := ob.NewSMTP(ob.SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: ob.NoTLS})
		if err != nil {
			b.Fatal(err)
		}
		kind, dest, dl = scheduler.MessageEmail, "client@example.test", s
		// The test server keeps its messages; poll them into the receiver.
		stop := make(chan struct{})
		var polled sync.WaitGroup
		polled.Add(1)
		go func() {
			defer polled.Done()
			seen := 0
			for {
				msgs := srv.Messages()
				for _, m := range msgs[seen:] {
					key, _, _ := strings.Cut(strings.Trim(m.MessageID, "<>"), "@")
					rc.accepted(key, m.At)
				}
				seen = len(msgs)
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		defer func() { close(stop); polled.Wait() }()
	case "http":
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			rc.accepted(r.Header.Get("Idempotency-Key"), time.Now())
			w.WriteHeader(http.StatusOK)
		}))
		defer srv.Close()
		h, err := ob.NewWebhook(ob.WebhookConfig{Hosts: []string{"127.0.0.1"}})
		if err != nil {
			b.Fatal(err)
		}
		kind, dest, dl = scheduler.MessageWebhook, srv.URL+"/invoices", h
	}

	var (
		dispatched chan error
		endTerm    context.CancelFunc
	)
	if send == "outbox" {
		d, err := ob.New(ob.Config{Store: store, Deliverers: map[scheduler.MessageKind]ob.Deliverer{kind: dl},
			Fenced: func(err error) bool { return errors.Is(err, scheduler.ErrFenced) }})
		if err != nil {
			b.Fatal(err)
		}
		var tctx context.Context
		tctx, endTerm = context.WithCancel(ctx)
		dispatched = make(chan error, 1)
		go func() { dispatched <- d.Run(tctx, token) }()
	}

	b.ResetTimer()
	slot := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	commits := make([]time.Time, n+1)
	start := time.Now()
	for i := 1; i <= n; i++ {
		m := scheduler.Message{Key: fmt.Sprintf("bench.%d", i), Job: job, Token: token, ScheduledAt: slot,
			Kind: kind, Destination: dest, Subject: "Invoice 2026-03", Body: fmt.Sprintf(`{"client":%d}`, i)}
		if err := store.Fenced(ctx, job, token, func(ctx context.Context, tx scheduler.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO invoices (client_id, month, amount, token) VALUES ($1, '2026-03', 101.00, $2)
				ON CONFLICT DO NOTHING`, i, token); err != nil {
				return err
			}
			if send == "outbox" {
				_, err := store.Enqueue(ctx, tx, m)
				return err
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		commits[i] = time.Now()
		if send == "direct" {
			if err := dl.Deliver(ctx, m, token); err != nil {
				b.Fatal(err)
			}
		}
	}
	jobTook := time.Since(start)
	for rc.count() < n {
		if ctx.Err() != nil {
			b.Fatalf("%d of %d delivered", rc.count(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	if endTerm != nil {
		endTerm()
		if err := <-dispatched; err != nil {
			b.Fatal(err)
		}
	}

	var first, last time.Time
	delays := make([]time.Duration, 0, n)
	rc.mu.Lock()
	for i := 1; i <= n; i++ {
		at := rc.at[fmt.Sprintf("bench.%d", i)]
		delays = append(delays, at.Sub(commits[i]))
		if at.After(last) {
			last = at
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	rc.mu.Unlock()
	slices.Sort(delays)
	q := func(p int) float64 {
		return float64(delays[min(len(delays)-1, len(delays)*p/100)].Microseconds()) / 1000
	}
	b.ReportMetric(jobTook.Seconds(), "job-s")
	b.ReportMetric(float64(n)/last.Sub(commits[1]).Seconds(), "msgs/s")
	b.ReportMetric(float64(n-1)/last.Sub(first).Seconds(), "drain-msgs/s")
	b.ReportMetric(q(50), "delay-p50-ms")
	b.ReportMetric(q(99), "delay-p99-ms")
}
