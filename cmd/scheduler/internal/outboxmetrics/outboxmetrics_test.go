package outboxmetrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
)

// statsFunc is a Stats of a function.
type statsFunc func(context.Context) (fence.OutboxStats, error)

func (f statsFunc) OutboxStats(ctx context.Context) (fence.OutboxStats, error) { return f(ctx) }

// TestOutboxMetrics: the gauges follow the store's summary at each scrape, the age by the
// injected clock; a store that does not answer leaves them out rather than failing the scrape;
// the observer counts each attempt by kind and result.
func TestOutboxMetrics(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	var st fence.OutboxStats
	var err error
	reg := prometheus.NewRegistry()
	observe := Register(reg, statsFunc(func(context.Context) (fence.OutboxStats, error) { return st, err }),
		zaptest.NewLogger(t), func() time.Time { return now })
	gauges := func() map[string]float64 {
		mfs, gerr := reg.Gather()
		if gerr != nil {
			t.Fatal(gerr)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			if g := mf.GetMetric()[0].GetGauge(); g != nil {
				out[mf.GetName()] = g.GetValue()
			}
		}
		return out
	}
	st = fence.OutboxStats{Pending: 4, OldestPending: now.Add(-90 * time.Second)}
	if g := gauges(); g["scheduler_outbox_pending"] != 4 || g["scheduler_outbox_oldest_pending_seconds"] != 90 {
		t.Fatalf("gauges = %v, want pending 4, oldest 90 s", g)
	}
	st = fence.OutboxStats{}
	if g := gauges(); g["scheduler_outbox_pending"] != 0 || g["scheduler_outbox_oldest_pending_seconds"] != 0 {
		t.Fatalf("gauges = %v, want 0 and 0 with nothing pending", g)
	}
	err = errors.New("store away")
	if g := gauges(); len(g) != 0 {
		t.Fatalf("gauges = %v while the store does not answer, want none", g)
	}

	observe(scheduler.Message{Kind: scheduler.MessageEmail}, scheduler.Delivery{Outcome: scheduler.DeliveryOK})
	observe(scheduler.Message{Kind: scheduler.MessageWebhook}, scheduler.Delivery{Outcome: scheduler.DeliveryDead})
	mfs, _ := reg.Gather()
	counts := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "scheduler_outbox_deliveries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			counts[m.GetLabel()[0].GetValue()+"/"+m.GetLabel()[1].GetValue()] = m.GetCounter().GetValue()
		}
	}
	if len(counts) != 6 || counts["email/delivered"] != 1 || counts["webhook/dead"] != 1 || counts["email/retry"] != 0 {
		t.Fatalf("deliveries_total = %v, want every kind and result, email/delivered 1, webhook/dead 1", counts)
	}
}
