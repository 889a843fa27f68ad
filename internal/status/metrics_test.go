package status

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"scheduler"
)

// TestMetrics_Events feeds each event into the metrics and reads the series a scrape shows.
func TestMetrics_Events(t *testing.T) {
	m := mustMetrics(t, "auto", "alpha")
	m.Elected(42)
	m.LeaderChanged()
	m.Reloaded(true)
	m.Reloaded(false)
	m.Reloaded(false)
	m.Pruned("alpha", 3)
	m.Fired("alpha", time.Second)
	m.Recorded("alpha", scheduler.StatusSkipped)
	m.Blocked("alpha", true)
	for name, c := range map[string]struct {
		got  prometheus.Metric
		want float64
	}{
		"is_leader": {m.isLeader, 1}, "term_token": {m.termToken, 42}, "leader_changes_total": {m.leaderChanges, 1},
		"runs_pruned_total": {m.pruned, 3},
	} {
		if got := value(t, c.got); got != c.want {
			t.Errorf("scheduler_%s=%v, want %v", name, got, c.want)
		}
	}
	if v := value(t, m.reloads.WithLabelValues("failure")); v != 2 {
		t.Errorf("reloads{result=failure}=%v, want 2", v)
	}
	if v := value(t, m.skipped.WithLabelValues("alpha")); v != 1 {
		t.Errorf("skipped{job=alpha}=%v, want 1", v)
	}
	if v := value(t, m.blocked.WithLabelValues("alpha")); v != 1 {
		t.Errorf("job_blocked{job=alpha}=%v, want 1", v)
	}
	m.Lost("expired")
	if v := value(t, m.isLeader); v != 0 {
		t.Errorf("is_leader=%v after the term ended, want 0", v)
	}
	if v := value(t, m.termsEnded.WithLabelValues("expired")); v != 1 {
		t.Errorf("terms_ended{reason=expired}=%v, want 1", v)
	}
}

func TestMetrics_RefusesUnknownPerJobMode(t *testing.T) {
	if _, err := NewMetrics(MetricsConfig{PerJob: "sometimes"}); err == nil {
		t.Fatal("NewMetrics with per-job mode sometimes: no error")
	}
}
