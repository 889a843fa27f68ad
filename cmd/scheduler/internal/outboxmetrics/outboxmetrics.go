// Package outboxmetrics is the outbox's metrics: the dispatcher's attempts by kind and result,
// counted by the replica that made them, and the messages waiting and the oldest one's age, read
// from the store at each scrape on every replica (the outbox is the cluster's, not the leader's).
package outboxmetrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/fence"
)

// Stats reads the outbox's summary; the store implements it.
type Stats interface {
	OutboxStats(ctx context.Context) (fence.OutboxStats, error)
}

// outboxStatsTimeout bounds the read of the outbox's summary at a scrape.
const outboxStatsTimeout = 2 * time.Second

// Register registers the outbox's metrics on reg and returns the dispatcher's observer of each
// attempt; now is the clock the oldest message's age is taken by.
func Register(reg prometheus.Registerer, store Stats, lg *zap.Logger, now func() time.Time) func(scheduler.Message, scheduler.Delivery) {
	deliveries := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_outbox_deliveries_total",
		Help: "Delivery attempts of outbox messages by this replica's dispatcher, by kind (email, webhook) and result (delivered, retry, dead).",
	}, []string{"kind", "result"})
	for _, k := range []scheduler.MessageKind{scheduler.MessageEmail, scheduler.MessageWebhook} {
		for _, r := range []scheduler.DeliveryOutcome{scheduler.DeliveryOK, scheduler.DeliveryRetry, scheduler.DeliveryDead} {
			deliveries.WithLabelValues(string(k), string(r))
		}
	}
	reg.MustRegister(deliveries, &outboxCollector{store: store, lg: lg, now: now,
		pending: prometheus.NewDesc("scheduler_outbox_pending",
			"Outbox messages waiting for delivery (pending or being sent).", nil, nil),
		oldest: prometheus.NewDesc("scheduler_outbox_oldest_pending_seconds",
			"Age of the oldest outbox message waiting for delivery; 0 when none waits.", nil, nil),
	})
	return func(m scheduler.Message, d scheduler.Delivery) {
		deliveries.WithLabelValues(string(m.Kind), string(d.Outcome)).Inc()
	}
}

// outboxCollector reads the outbox's summary at each scrape.
type outboxCollector struct {
	store           Stats
	lg              *zap.Logger
	now             func() time.Time
	pending, oldest *prometheus.Desc
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.oldest
}

// Collect reports nothing when the store does not answer: a scrape must not fail for it.
func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), outboxStatsTimeout)
	defer cancel()
	st, err := c.store.OutboxStats(ctx)
	if err != nil {
		c.lg.Debug("outbox stats unavailable", zap.Error(err))
		return
	}
	age := 0.0
	if !st.OldestPending.IsZero() {
		age = max(0, c.now().Sub(st.OldestPending).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
}
