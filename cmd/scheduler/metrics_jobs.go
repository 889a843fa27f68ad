package main

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"scheduler"
)

// MetricsConfig bounds the Prometheus series the daemon exports.
type MetricsConfig struct {
	// PerJob says whether the per-job series (labelled job) are exported: on, off, or auto,
	// which exports them while the table has at most perJobAutoLimit jobs and aggregates them
	// under job="*" above that. Default: auto.
	PerJob string `mapstructure:"per_job"`
}

// perJobAutoLimit is the largest table for which metrics.per_job auto exports per-job series.
const perJobAutoLimit = 1000

// perJobSeries reports whether the per-job series are exported for a table of n jobs.
func (m MetricsConfig) perJobSeries(n int) bool {
	switch m.PerJob {
	case "on":
		return true
	case "off":
		return false
	}
	return n <= perJobAutoLimit
}

// aggregateJob is the job label of the per-job series when they are aggregated: not a valid
// job name, so it cannot be mistaken for one.
const aggregateJob = "*"

// finalStatuses are the statuses a run or a slot ends with, each a runs_total series per job.
var finalStatuses = []scheduler.Status{
	scheduler.StatusSucceeded, scheduler.StatusFailed, scheduler.StatusSkipped, scheduler.StatusMissed, scheduler.StatusFenced,
}

// jobSeries maps jobs to the job label of their series: the job's name, or aggregateJob.
type jobSeries struct {
	mu     sync.RWMutex
	labels map[string]string // configured job → label value
}

// label returns the label value of job's series, and false for a job not in the table (a run
// of a job a reload removed finishing late), whose series must not come back.
func (s *jobSeries) label(job string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	l, ok := s.labels[job]
	return l, ok
}

// setJobs makes the per-job series match the table: each series of each job (or the aggregate)
// exists, at 0 if new, so that alerts on increase() see the first event; the series of jobs no
// longer in the table are deleted.
func (m *metrics) setJobs(mc MetricsConfig, names []string) {
	perJob := mc.perJobSeries(len(names))
	next := make(map[string]string, len(names))
	values := map[string]bool{}
	for _, n := range names {
		l := aggregateJob
		if perJob {
			l = n
		}
		next[n] = l
		values[l] = true
	}
	m.jobs.mu.Lock()
	defer m.jobs.mu.Unlock()
	for name := range m.jobs.labels {
		if _, ok := next[name]; !ok || !perJob {
			m.blocked.DeleteLabelValues(name)
		}
	}
	for _, old := range m.jobs.labels {
		if !values[old] {
			m.runs.DeletePartialMatch(prometheus.Labels{"job": old})
			m.runDuration.DeleteLabelValues(old)
			for _, v := range m.perJobVecs() {
				v.DeleteLabelValues(old)
			}
		}
	}
	for l := range values {
		for _, st := range finalStatuses {
			m.runs.WithLabelValues(l, string(st))
		}
		m.runDuration.WithLabelValues(l)
		for _, v := range m.perJobVecs() {
			v.WithLabelValues(l)
		}
		if perJob {
			m.blocked.WithLabelValues(l)
		}
	}
	m.jobs.labels = next
}

// setBlocked sets a job's scheduler_job_blocked gauge. With per-job series it exists at 0 for
// every job; aggregated, a gauge cannot be summed, so only a blocked job has a series (at 1),
// named for the job: blocked jobs are few, and an alert must say which.
func (m *metrics) setBlocked(job string, on bool) {
	m.jobs.mu.RLock()
	defer m.jobs.mu.RUnlock()
	l, ok := m.jobs.labels[job]
	switch {
	case !ok:
	case on:
		m.blocked.WithLabelValues(job).Set(1)
	case l == aggregateJob:
		m.blocked.DeleteLabelValues(job)
	default:
		m.blocked.WithLabelValues(job).Set(0)
	}
}

// perJobVecs are the counters labelled by job alone.
func (m *metrics) perJobVecs() []*prometheus.CounterVec {
	return []*prometheus.CounterVec{m.fenced, m.catchupRuns, m.missed, m.skipped}
}

// durationBuckets are the run duration buckets: from 10ms by factors of 4 until the longest a
// run of the table may take (its timeout times its attempts), and at least the default timeout.
func durationBuckets(cfg *Config) []float64 {
	longest := time.Hour
	for _, j := range cfg.Jobs {
		if d := j.Timeout * time.Duration(j.Retries+1); d > longest {
			longest = d
		}
	}
	b := []float64{0.01}
	for b[len(b)-1] < longest.Seconds() {
		b = append(b, b[len(b)-1]*4)
	}
	return b
}

// jobNames returns the names of js.
func jobNames(js []Job) []string {
	names := make([]string, len(js))
	for i, j := range js {
		names[i] = j.Name
	}
	return names
}
