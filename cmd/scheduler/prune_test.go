package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/retention"
	"scheduler/internal/status"
	"scheduler/internal/testenv"
)

// fillLedger gives job n finished runs, an hour apart, ending a day before now, with token.
func fillLedger(t *testing.T, s *fence.Store, token int64, job string, n int, now time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var slots []scheduler.SlotKey
	for i := range n {
		slots = append(slots, scheduler.SlotKey{Job: job, At: now.Add(-24*time.Hour - time.Duration(i)*time.Hour)})
	}
	res, err := s.ClaimMany(ctx, token, "filler", slots)
	if err != nil {
		t.Fatal(err)
	}
	cs := make([]scheduler.Completion, len(res))
	for i, r := range res {
		cs[i] = scheduler.Completion{RunID: r.Run.RunID, Job: job, Status: scheduler.StatusSucceeded}
	}
	if _, err := s.CompleteMany(ctx, token, cs); err != nil {
		t.Fatal(err)
	}
}

// TestPruning_Store prunes a real ledger as the daemon does and counts the rows.
func TestPruning_Store(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	stores := map[string]fence.Config{
		"postgres": {DSN: testenv.MustDatabase(t)},
		"sqlite":   {Path: filepath.Join(t.TempDir(), "scheduler.db")},
	}
	for name, fc := range stores {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s := migratedStore(ctx, t, fc)
			fillLedger(t, s, 4, "yearly", 30, now)
			fillLedger(t, s, 4, "keepall", 30, now)
			m, err := status.NewMetrics(status.MetricsConfig{PerJob: "auto", Jobs: []string{"yearly", "keepall"}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := retention.New(retention.Config{
				Ledger: s, Batch: 4, Pause: time.Nanosecond, Now: func() time.Time { return now },
				Policies: func() []retention.Policy {
					return []retention.Policy{
						{Job: "yearly", MaxRuns: 5, Catchup: time.Hour},
						{Job: "keepall", Catchup: time.Hour},
					}
				},
				Pruned: m.Pruned,
				Logger: zaptest.NewLogger(t),
			})
			if err != nil {
				t.Fatal(err)
			}
			n, err := p.Pass(ctx, 4)
			if err != nil || n != 25 {
				t.Fatalf("pass = %d, %v; want 25 runs", n, err)
			}
			if v := scraped(t, m, "scheduler_runs_pruned_total"); v != 25 {
				t.Fatalf("scheduler_runs_pruned_total = %v, want 25", v)
			}
			for job, want := range map[string]int{"yearly": 5, "keepall": 30} {
				runs, err := s.History(ctx, job, 100)
				if err != nil || len(runs) != want {
					t.Fatalf("%s: %d runs (err %v), want %d", job, len(runs), err, want)
				}
			}
			// A newer leader raised the fence: this term prunes nothing more.
			if err := s.RaiseAll(ctx, []string{"yearly"}, 9); err != nil {
				t.Fatal(err)
			}
			_, err = p.Pass(ctx, 4)
			if !errors.Is(err, scheduler.ErrFenced) {
				t.Fatalf("pass with a stale token: %v, want scheduler.ErrFenced", err)
			}
		})
	}
}

// TestDaemon_PrunesLedger runs a leader with a small retention over a ledger that exceeds it.
func TestDaemon_PrunesLedger(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	c := newCluster(t, dsn, "")
	c.writeConfig(testJobs + "history: {max_runs: 5, prune_interval: 200ms, prune_pause: 1ms, prune_batch: 7}\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := fence.Open(ctx, fence.Config{DSN: dsn}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Token 1: below any leader's, whose key is created after the election's first write.
	fillLedger(t, s, 1, "yearly", 40, time.Now())
	c.start("a")
	c.wait("the yearly job's ledger pruned to 5 runs", func() bool { return len(c.history("yearly")) == 5 })
	var addr string
	c.wait("the replica's http address", func() bool {
		for _, r := range c.status().Replicas {
			addr = r.HTTPAddr
		}
		return addr != ""
	})
	_, body := httpGet(t, "http://"+addr+"/metrics")
	got := regexp.MustCompile(`(?m)^scheduler_runs_pruned_total (\S+)$`).FindStringSubmatch(body)
	if got == nil {
		t.Fatalf("no scheduler_runs_pruned_total in /metrics:\n%.2000s", body)
	}
	if v, _ := strconv.ParseFloat(got[1], 64); v < 35 {
		t.Fatalf("scheduler_runs_pruned_total = %v, want >= 35", v)
	}
	for _, job := range []string{"tick", "yearly"} {
		if !strings.Contains(body, fmt.Sprintf(`scheduler_missed_slots_total{job=%q} `, job)) {
			t.Errorf("no missed_slots_total series for %s at start", job)
		}
	}
}

// scraped returns the value of the counter name, as a scrape of m reads it.
func scraped(t *testing.T, m *status.Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}
