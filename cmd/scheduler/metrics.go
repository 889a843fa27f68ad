package main

import (
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"scheduler"
	"scheduler/internal/election"
	"scheduler/internal/jobs"
)

// metrics are the daemon's Prometheus metrics, on a registry of their own.
type metrics struct {
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

// newMetrics returns the metrics of a daemon running cfg, every per-job series present.
func newMetrics(cfg *Config) *metrics {
	m := &metrics{
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
			Buckets: durationBuckets(cfg),
		}, []string{"job"}),
		fireDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "scheduler_fire_delay_seconds", Help: "Start of a run minus its slot (jitter and catch-up included).",
			Buckets: []float64{.001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 300},
		}),
		fenced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_fence_rejections_total", Help: "Writes of this replica the store refused because a newer leader's token had raised the fence.",
		}, []string{"job"}),
		catchupRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_catchup_runs_total", Help: "Runs started by catch-up after a takeover.",
		}, []string{"job"}),
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_missed_slots_total", Help: "Slots recorded missed (no leader in time, misfire policy).",
		}, []string{"job"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_skipped_slots_total", Help: "Slots recorded skipped (paused, overlap).",
		}, []string{"job"}),
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
		ConstLabels: prometheus.Labels{"version": version, "commit": buildCommit(), "go_version": runtime.Version()},
	})
	build.Set(1)
	m.reg.MustRegister(m.isLeader, m.termToken, m.leaderChanges, m.termsEnded, m.runs, m.runDuration, m.fireDelay,
		m.fenced, m.catchupRuns, m.missed, m.skipped, m.reloads, m.blocked, m.pruned, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	m.setJobs(cfg.Metrics, jobNames(cfg.Jobs))
	return m
}

// electionEvents feeds leadership changes into the metrics.
func (m *metrics) electionEvents() election.Events {
	return election.Events{
		OnElected: func(t election.Term) {
			m.isLeader.Set(1)
			m.termToken.Set(float64(t.Token))
		},
		OnLost: func(_ election.Term, reason election.Reason) {
			m.isLeader.Set(0)
			m.termsEnded.WithLabelValues(string(reason)).Inc()
		},
	}
}

// runnerHooks feeds run outcomes into the metrics.
func (m *metrics) runnerHooks() jobs.Hooks {
	return jobs.Hooks{
		Fired: func(_ string, delay time.Duration) { m.fireDelay.Observe(delay.Seconds()) },
		Finished: func(job string, status scheduler.Status, took time.Duration) {
			if l, ok := m.jobs.label(job); ok {
				m.runs.WithLabelValues(l, string(status)).Inc()
				m.runDuration.WithLabelValues(l).Observe(took.Seconds())
			}
		},
		Recorded: func(job string, status scheduler.Status) {
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
		},
		CatchupRun: func(job string) {
			if l, ok := m.jobs.label(job); ok {
				m.catchupRuns.WithLabelValues(l).Inc()
			}
		},
		Fenced: func(job string) {
			if l, ok := m.jobs.label(job); ok {
				m.fenced.WithLabelValues(l).Inc()
			}
		},
		Blocked: m.setBlocked,
	}
}
