package status

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"scheduler"
)

// PerJobAutoLimit is the largest table for which per-job series "auto" exports a series per
// job; above it they are aggregated under AggregateJob.
const PerJobAutoLimit = 1000

// AggregateJob is the job label of the per-job series when they are aggregated: not a valid
// job name, so it cannot be mistaken for one.
const AggregateJob = "*"

// perJobSeries reports whether mode exports the per-job series for a table of n jobs.
func perJobSeries(mode string, n int) bool {
	switch mode {
	case "on":
		return true
	case "off":
		return false
	}
	return n <= PerJobAutoLimit
}

// finalStatuses are the statuses a run or a slot ends with, each a runs_total series per job.
var finalStatuses = []scheduler.Status{
	scheduler.StatusSucceeded, scheduler.StatusFailed, scheduler.StatusSkipped, scheduler.StatusMissed, scheduler.StatusFenced,
}

// jobSeries maps jobs to the job label of their series: the job's name, or AggregateJob.
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

// SetJobs makes the per-job series match the table names under the per-job mode (auto, on or
// off): each series of each job (or the aggregate) exists, at 0 if new, so that alerts on
// increase() see the first event; the series of jobs no longer in the table are deleted.
func (m *Metrics) SetJobs(mode string, names []string) error {
	switch mode {
	case "auto", "on", "off":
	default:
		return fmt.Errorf("metrics: per-job series %q: want auto, on or off", mode)
	}
	perJob := perJobSeries(mode, len(names))
	next := make(map[string]string, len(names))
	values := map[string]bool{}
	for _, n := range names {
		l := AggregateJob
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
	return nil
}

// Blocked sets a job's scheduler_job_blocked gauge. With per-job series it exists at 0 for
// every job; aggregated, a gauge cannot be summed, so only a blocked job has a series (at 1),
// named for the job: blocked jobs are few, and an alert must say which.
func (m *Metrics) Blocked(job string, on bool) {
	m.jobs.mu.RLock()
	defer m.jobs.mu.RUnlock()
	l, ok := m.jobs.labels[job]
	switch {
	case !ok:
	case on:
		m.blocked.WithLabelValues(job).Set(1)
	case l == AggregateJob:
		m.blocked.DeleteLabelValues(job)
	default:
		m.blocked.WithLabelValues(job).Set(0)
	}
}

// perJobVecs are the counters labelled by job alone.
func (m *Metrics) perJobVecs() []*prometheus.CounterVec {
	return []*prometheus.CounterVec{m.fenced, m.catchupRuns, m.missed, m.skipped}
}
