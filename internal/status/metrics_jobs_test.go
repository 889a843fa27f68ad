package status

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"scheduler"
)

// perJobFamilies are the metric families with a series per job.
var perJobFamilies = []string{
	"scheduler_runs_total", "scheduler_run_duration_seconds", "scheduler_fence_rejections_total",
	"scheduler_missed_slots_total", "scheduler_catchup_runs_total", "scheduler_skipped_slots_total",
}

// mustMetrics returns the metrics of a table of names, each job at the default timeout.
func mustMetrics(t *testing.T, perJob string, names ...string) *Metrics {
	t.Helper()
	m, err := NewMetrics(MetricsConfig{PerJob: perJob, Jobs: names, Longest: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// families scrapes m's registry.
func families(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// jobsOf returns the job label values of the family's series.
func jobsOf(mf *dto.MetricFamily) []string {
	var js []string
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "job" && !slices.Contains(js, l.GetValue()) {
				js = append(js, l.GetValue())
			}
		}
	}
	slices.Sort(js)
	return js
}

// value returns the value of a counter or gauge, as a scrape reads it.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("not a counter or gauge: %v", &m)
	return 0
}

// perJobSeriesCount is the number of series labelled job, in every family the registry
// exports, so that a per-job metric added later is counted too.
func perJobSeriesCount(t *testing.T, m *Metrics) int {
	t.Helper()
	n := 0
	for _, mf := range families(t, m) {
		for _, s := range mf.GetMetric() {
			if !slices.ContainsFunc(s.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "job" }) {
				continue
			}
			if s.GetHistogram() != nil {
				n += len(s.GetHistogram().GetBucket()) + 3 // the +Inf bucket, _sum and _count
			} else {
				n++
			}
		}
	}
	return n
}

func TestMetrics_PerJobSeriesFromTheStart(t *testing.T) {
	m := mustMetrics(t, "auto", "alpha", "beta")
	mfs := families(t, m)
	for _, name := range perJobFamilies {
		mf := mfs[name]
		if mf == nil {
			t.Errorf("%s: not exported before its first event", name)
			continue
		}
		if mf.GetHelp() == "" {
			t.Errorf("%s: no HELP", name)
		}
		if got := jobsOf(mf); !slices.Equal(got, []string{"alpha", "beta"}) {
			t.Errorf("%s: jobs %v, want [alpha beta]", name, got)
		}
	}
	for _, job := range []string{"alpha", "beta"} {
		for _, st := range finalStatuses {
			if v := value(t, m.runs.WithLabelValues(job, string(st))); v != 0 {
				t.Errorf("runs_total{job=%q,status=%q} = %v, want 0", job, st, v)
			}
		}
		for _, c := range m.perJobVecs() {
			if v := value(t, c.WithLabelValues(job)); v != 0 {
				t.Errorf("counter of %s = %v, want 0", job, v)
			}
		}
	}
	if got := families(t, m)["scheduler_runs_pruned_total"]; got == nil || got.GetHelp() == "" {
		t.Errorf("scheduler_runs_pruned_total not exported at 0 with HELP")
	}
	// The series per job at the default timeout: README and the annotated config state the figure.
	n := perJobSeriesCount(t, m) / 2
	for file, want := range map[string]string{
		"../../README.md":              fmt.Sprintf("A job costs %d series at the default timeout", n),
		"../../configs/scheduler.yaml": fmt.Sprintf("about %d series a job", n),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not say %q: a job exports %d series", file, want, n)
		}
	}
}

func TestMetrics_ReloadDeletesRemovedJobs(t *testing.T) {
	m := mustMetrics(t, "auto", "alpha", "beta")
	hooks := m
	hooks.Finished("beta", scheduler.StatusSucceeded, time.Second)
	hooks.Fenced("beta")
	if err := m.SetJobs("auto", []string{"alpha", "gamma"}); err != nil {
		t.Fatal(err)
	}
	for name, mf := range families(t, m) {
		if slices.Contains(jobsOf(mf), "beta") {
			t.Errorf("%s: series of the removed job beta are still exported", name)
		}
	}
	if got := jobsOf(families(t, m)["scheduler_missed_slots_total"]); !slices.Equal(got, []string{"alpha", "gamma"}) {
		t.Errorf("missed_slots_total jobs %v, want [alpha gamma]", got)
	}
	// A run of the removed job that finishes late does not bring its series back.
	hooks.Finished("beta", scheduler.StatusFailed, time.Second)
	hooks.Recorded("beta", scheduler.StatusMissed)
	hooks.CatchupRun("beta")
	for name, mf := range families(t, m) {
		if slices.Contains(jobsOf(mf), "beta") {
			t.Errorf("%s: a late event of the removed job beta recreated its series", name)
		}
	}
}

func TestMetrics_DurationBucketsReachTheLongestTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		retries int
	}{
		{"DefaultTimeout", time.Hour, 0},
		{"LongTimeout", 26 * time.Hour, 0},
		{"Retries", 2 * time.Hour, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewMetrics(MetricsConfig{PerJob: "auto", Jobs: []string{"short", "long"}, Longest: tc.timeout * time.Duration(tc.retries+1)})
			if err != nil {
				t.Fatal(err)
			}
			mf := families(t, m)["scheduler_run_duration_seconds"]
			buckets := mf.GetMetric()[0].GetHistogram().GetBucket()
			top := buckets[len(buckets)-1].GetUpperBound()
			if want := (tc.timeout * time.Duration(tc.retries+1)).Seconds(); top < want {
				t.Fatalf("top bucket %gs, want >= %gs", top, want)
			}
		})
	}
}

func TestMetrics_PerJobBound(t *testing.T) {
	names := func(n int) []string {
		var ns []string
		for i := range n {
			ns = append(ns, fmt.Sprintf("job-%d", i))
		}
		return ns
	}
	t.Run("OffDoesNotGrowWithJobs", func(t *testing.T) {
		few := perJobSeriesCount(t, mustMetrics(t, "off", names(3)...))
		many := perJobSeriesCount(t, mustMetrics(t, "off", names(2000)...))
		if few != many || few == 0 {
			t.Fatalf("%d series for 3 jobs, %d for 2000: want the same, non-zero", few, many)
		}
		m := mustMetrics(t, "off", "alpha")
		m.Finished("alpha", scheduler.StatusSucceeded, time.Second)
		if v := value(t, m.runs.WithLabelValues(AggregateJob, "succeeded")); v != 1 {
			t.Fatalf("aggregate runs_total = %v, want 1", v)
		}
	})
	t.Run("AutoAggregatesAboveTheLimit", func(t *testing.T) {
		below := mustMetrics(t, "auto", names(PerJobAutoLimit)...)
		if got := len(jobsOf(families(t, below)["scheduler_missed_slots_total"])); got != PerJobAutoLimit {
			t.Fatalf("%d jobs labelled at the limit, want %d", got, PerJobAutoLimit)
		}
		above := mustMetrics(t, "auto", names(PerJobAutoLimit+1)...)
		if got := jobsOf(families(t, above)["scheduler_missed_slots_total"]); !slices.Equal(got, []string{AggregateJob}) {
			t.Fatalf("jobs labelled above the limit: %d, want only %q", len(got), AggregateJob)
		}
	})
	t.Run("OnKeepsEveryJob", func(t *testing.T) {
		m := mustMetrics(t, "on", names(PerJobAutoLimit+1)...)
		if got := len(jobsOf(families(t, m)["scheduler_skipped_slots_total"])); got != PerJobAutoLimit+1 {
			t.Fatalf("%d jobs labelled, want %d", got, PerJobAutoLimit+1)
		}
	})
	t.Run("ReloadAcrossTheLimit", func(t *testing.T) {
		m := mustMetrics(t, "auto", "alpha")
		if err := m.SetJobs("auto", names(PerJobAutoLimit+1)); err != nil {
			t.Fatal(err)
		}
		if got := jobsOf(families(t, m)["scheduler_runs_total"]); !slices.Equal(got, []string{AggregateJob}) {
			t.Fatalf("jobs after growing past the limit: %.80v", strings.Join(got, ","))
		}
	})
}
