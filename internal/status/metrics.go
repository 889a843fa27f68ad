package status

import (
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"scheduler"
)

// MetricsConfig describes the daemon whose metrics are exported.
type MetricsConfig struct {
	// PerJob says whether the per-job series are exported: on, off, or auto (see PerJobAutoLimit).
	PerJob string
	// Jobs are the names of the table's jobs.
	Jobs []string
	// Longest is the longest a run of the table may take (its timeout times its attempts): the
	// run duration buckets reach it, and at least an hour.
	Longest time.Duration
	// Version and Commit label scheduler_build_info.
	Version, Commit string
}

// Metrics are the daemon's Prometheus metrics, on a registry of their own.
type Metrics struct {
	reg *prometheus.Registry

	isLeader      prometheus.Gauge
	termToken     prometheus.Gauge
	leaderChanges prometheus.Counter
	termsEnded    *prometheus.CounterVec
	runs          *prometheus.CounterVec
	runDuration   *prometheus.HistogramVec
	fireDelay     prometheus.Histogram
	fenced        *prometheus.CounterVec
	catchupRuns   *prometheus.CounterVec
	missed        *prometheus.CounterVec
	skipped       *prometheus.CounterVec
	reloads       *prometheus.CounterVec
	blocked       *prometheus.GaugeVec
	pruned        prometheus.Counter

	jobs jobSeries
}

// NewMetrics returns the metrics of a daemon described by cfg, every per-job series present.
func NewMetrics(cfg MetricsConfig) (*Metrics, error) {
	perJob := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"job"})
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scheduler_is_leader", Help: "1 while this replica leads and runs the cron table, else 0.",
		}),
		termToken: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scheduler_term_token", Help: "Fencing token of the leadership term this replica holds or last held.",
		}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_leader_changes_total", Help: "Leaders this replica has seen take over, itself included.",
		}),
		termsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_terms_ended_total", Help: "Leadership terms of this replica that ended, by reason.",
		}, []string{"reason"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_runs_total", Help: "Runs finished by this replica, by job and final status.",
		}, []string{"job", "status"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "scheduler_run_duration_seconds", Help: "Duration of finished runs, retries included.",
			Buckets: durationBuckets(cfg.Longest),
		}, []string{"job"}),
		fireDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "scheduler_fire_delay_seconds", Help: "Start of a run minus its slot (jitter and catch-up included).",
			Buckets: []float64{.001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 300},
		}),
		fenced:      perJob("scheduler_fence_rejections_total", "Writes of this replica the store refused because a newer leader's token had raised the fence."),
		catchupRuns: perJob("scheduler_catchup_runs_total", "Runs started by catch-up after a takeover."),
		missed:      perJob("scheduler_missed_slots_total", "Slots recorded missed (no leader in time, misfire policy)."),
		skipped:     perJob("scheduler_skipped_slots_total", "Slots recorded skipped (paused, overlap)."),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_config_reloads_total", Help: "Configuration reloads (SIGHUP), by result.",
		}, []string{"result"}),
		blocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "scheduler_job_blocked",
			Help: "1 while this replica leads and does not run the job because its fence is above the term's token (see /readyz), else 0.",
		}, []string{"job"}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_runs_pruned_total", Help: "Finished runs this replica deleted from the ledger under the retention (history.*).",
		}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scheduler_build_info", Help: "Build of this binary.",
		ConstLabels: prometheus.Labels{"version": cfg.Version, "commit": cfg.Commit, "go_version": runtime.Version()},
	})
	build.Set(1)
	m.reg.MustRegister(m.isLeader, m.termToken, m.leaderChanges, m.termsEnded, m.runs, m.runDuration, m.fireDelay,
		m.fenced, m.catchupRuns, m.missed, m.skipped, m.reloads, m.blocked, m.pruned, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	if err := m.SetJobs(cfg.PerJob, cfg.Jobs); err != nil {
		return nil, err
	}
	return m, nil
}

// Registry is the registry the metrics are on, for a handler or a scrape in a test.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Elected records a term of this replica won with token.
func (m *Metrics) Elected(token int64) {
	m.isLeader.Set(1)
	m.termToken.Set(float64(token))
}

// Lost records a term of this replica ended, for reason.
func (m *Metrics) Lost(reason string) {
	m.isLeader.Set(0)
	m.termsEnded.WithLabelValues(reason).Inc()
}

// LeaderChanged records a leader, this replica or another, taking over.
func (m *Metrics) LeaderChanged() { m.leaderChanges.Inc() }

// Reloaded records a configuration reload that succeeded (ok) or was rejected.
func (m *Metrics) Reloaded(ok bool) {
	result := "failure"
	if ok {
		result = "success"
	}
	m.reloads.WithLabelValues(result).Inc()
}

// Pruned records n finished runs deleted from the ledger.
func (m *Metrics) Pruned(_ string, n int) { m.pruned.Add(float64(n)) }

// Fired records a run started delay after its slot.
func (m *Metrics) Fired(_ string, delay time.Duration) { m.fireDelay.Observe(delay.Seconds()) }

// Finished records a run of job that ended with status after took.
func (m *Metrics) Finished(job string, status scheduler.Status, took time.Duration) {
	if l, ok := m.jobs.label(job); ok {
		m.runs.WithLabelValues(l, string(status)).Inc()
		m.runDuration.WithLabelValues(l).Observe(took.Seconds())
	}
}

// Recorded records a slot of job recorded with status without running (skipped, missed).
func (m *Metrics) Recorded(job string, status scheduler.Status) {
	l, ok := m.jobs.label(job)
	if !ok {
		return
	}
	switch status {
	case scheduler.StatusMissed:
		m.missed.WithLabelValues(l).Inc()
	case scheduler.StatusSkipped:
		m.skipped.WithLabelValues(l).Inc()
	}
	m.runs.WithLabelValues(l, string(status)).Inc()
}

// CatchupRun records a run of job started by catch-up after a takeover.
func (m *Metrics) CatchupRun(job string) { m.count(m.catchupRuns, job) }

// Fenced records a write of job the store refused for this term's token.
func (m *Metrics) Fenced(job string) { m.count(m.fenced, job) }

// count adds one to job's series of v, unless job is not in the table.
func (m *Metrics) count(v *prometheus.CounterVec, job string) {
	if l, ok := m.jobs.label(job); ok {
		v.WithLabelValues(l).Inc()
	}
}

// durationBuckets are the run duration buckets: from 10ms by factors of 4 until longest, and at
// least the default timeout.
func durationBuckets(longest time.Duration) []float64 {
	longest = max(longest, time.Hour)
	b := []float64{0.01}
	for b[len(b)-1] < longest.Seconds() {
		b = append(b, b[len(b)-1]*4)
	}
	return b
}
