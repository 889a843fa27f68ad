package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"scheduler"
	ob "scheduler/internal/outbox"
)

// counter is a deliverer that accepts every message at once: what is left is the dispatcher's
// own cost, its claims and records in the store included.
type counter struct{ n atomic.Int64 }

func (c *counter) Deliver(context.Context, scheduler.Message, int64) error {
	c.n.Add(1)
	return nil
}

// BenchmarkOutboxDrain measures the dispatcher's cost per message: n messages already queued
// (committed before the dispatcher starts), one term's dispatcher at the daemon's defaults, a
// deliverer that costs nothing. Reported: the drain rate, the wall time per message, and the
// process's CPU time per message (the dispatcher's client work; the database server's is not
// counted).
//
//	go test -run '^$' -bench OutboxDrain -benchtime 1x -count 3 -timeout 30m ./bench/outbox/
func BenchmarkOutboxDrain(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for range b.N {
				drainCase(b, n)
			}
		})
	}
}

func drainCase(b *testing.B, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	const job, token, perTx = "invoices", 1, 1000
	store := openStore(ctx, b, job, token)
	defer store.Close()
	slot := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	for lo := 0; lo < n; lo += perTx {
		if err := store.Fenced(ctx, job, token, func(ctx context.Context, tx scheduler.Tx) error {
			for i := lo; i < min(lo+perTx, n); i++ {
				m := scheduler.Message{Key: fmt.Sprintf("drain.%d", i), Job: job, Token: token, ScheduledAt: slot,
					Kind: scheduler.MessageWebhook, Destination: "http://127.0.0.1/invoices", Body: fmt.Sprintf(`{"client":%d}`, i)}
				if _, err := store.Enqueue(ctx, tx, m); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	c := &counter{}
	d, err := ob.New(ob.Config{Store: store, Deliverers: map[scheduler.MessageKind]ob.Deliverer{scheduler.MessageWebhook: c},
		Fenced: func(err error) bool { return errors.Is(err, scheduler.ErrFenced) }})
	if err != nil {
		b.Fatal(err)
	}
	tctx, endTerm := context.WithCancel(ctx)
	dispatched := make(chan error, 1)
	b.ResetTimer()
	cpu0, start := cpuTime(), time.Now()
	go func() { dispatched <- d.Run(tctx, token) }()
	for c.n.Load() < int64(n) {
		if ctx.Err() != nil {
			b.Fatalf("%d of %d delivered", c.n.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	took, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	endTerm()
	if err := <-dispatched; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/took.Seconds(), "msgs/s")
	b.ReportMetric(float64(took.Microseconds())/float64(n), "wall-µs/msg")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/msg")
	b.ReportMetric(0, "ns/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
