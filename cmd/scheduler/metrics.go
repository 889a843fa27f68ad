package main

import (
	"time"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/jobs"
	"scheduler/internal/status"
)

// newMetrics returns the metrics of a daemon running cfg, every per-job series present.
func newMetrics(cfg *config.Config) (*status.Metrics, error) {
	return status.NewMetrics(status.MetricsConfig{
		PerJob: cfg.Metrics.PerJob, Jobs: jobNames(cfg.Jobs), Longest: longestRun(cfg.Jobs),
		Version: version, Commit: buildCommit(),
	})
}

// runnerHooks feeds run outcomes into m.
func runnerHooks(m *status.Metrics) jobs.Hooks {
	return jobs.Hooks{
		Fired: m.Fired, Finished: m.Finished, Recorded: m.Recorded,
		CatchupRun: m.CatchupRun, Fenced: m.Fenced, Blocked: m.Blocked,
	}
}

// longestRun is the longest a run of js may take: its timeout times its attempts.
func longestRun(js []config.Job) time.Duration {
	var longest time.Duration
	for _, j := range js {
		longest = max(longest, j.LongestRun())
	}
	return longest
}

// jobNames returns the names of js.
func jobNames(js []config.Job) []string {
	names := make([]string, len(js))
	for i, j := range js {
		names[i] = j.Name
	}
	return names
}
