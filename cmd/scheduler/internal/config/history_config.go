package config

import "time"

// HistoryConfig is the run ledger's retention and how the leader prunes it. MaxAge and MaxRuns
// here apply to every job that sets neither them nor defaults.history.
type HistoryConfig struct {
	JobHistory `mapstructure:",squash"`
	// PruneInterval is the wait before each pass over the jobs, the first of a term included.
	// Default: 10m.
	PruneInterval time.Duration `mapstructure:"prune_interval"`
	// PruneBatch is the most runs one delete removes, 1 to 10000. Default: 500.
	PruneBatch int `mapstructure:"prune_batch"`
	// PrunePause is the wait between two deletes that removed runs. Default: 200ms.
	PrunePause time.Duration `mapstructure:"prune_pause"`
}

// JobHistory is a job's retention in the run ledger. Running runs, runs inside the job's
// catch-up window and the job's last run are always kept.
type JobHistory struct {
	// MaxAge deletes finished runs whose slot is older. 0s: no age limit. Default: 2160h.
	MaxAge time.Duration `mapstructure:"max_age"`
	// MaxRuns keeps the job's newest MaxRuns finished scheduled runs (not manual or backfilled
	// ones). 0: no limit. Default: 10000.
	MaxRuns int `mapstructure:"max_runs"`
}

// minPruneInterval bounds history.prune_interval from below: a pass asks the store once per job,
// and passes a nanosecond apart kept the leader on a whole core, and the store busy, for good.
const minPruneInterval = 100 * time.Millisecond

// maxPruneBatch bounds history.prune_batch: one delete must stay short.
const maxPruneBatch = 10000

// jobHistoryKeys are the keys of a job's history block.
var jobHistoryKeys = []string{"max_age", "max_runs"}

// inheritHistory copies history.max_age and history.max_runs into defaults.history where it
// does not set them, and returns the keys it copied. A defaults.history that is not a mapping
// is left for the decoder to report.
func inheritHistory(raw map[string]any) map[string]bool {
	top, _ := raw["history"].(map[string]any)
	defaults, ok := raw["defaults"].(map[string]any)
	if !ok {
		if raw["defaults"] != nil {
			return nil
		}
		defaults = map[string]any{}
		raw["defaults"] = defaults
	}
	dh, ok := defaults["history"].(map[string]any)
	if !ok {
		if defaults["history"] != nil {
			return nil
		}
		dh = map[string]any{}
		defaults["history"] = dh
	}
	from := map[string]bool{}
	for _, k := range jobHistoryKeys {
		if v, set := top[k]; set {
			if _, own := dh[k]; !own {
				dh[k] = v
				from[k] = true
			}
		}
	}
	return from
}

// validateHistory checks the top-level history block.
func validateHistory(p *problems, h HistoryConfig) {
	checkJobHistory(p, "history", h.JobHistory, nil)
	if h.PruneInterval < minPruneInterval {
		p.add("history.prune_interval", "must be at least %s, got %s", minPruneInterval, h.PruneInterval)
	}
	if h.PruneBatch < 1 || h.PruneBatch > maxPruneBatch {
		p.add("history.prune_batch", "must be between 1 and %d, got %d", maxPruneBatch, h.PruneBatch)
	}
	p.nonNegative("history.prune_pause", h.PrunePause)
}

// checkJobHistory checks a history block at key, skipping the keys skip says were inherited
// (they are reported where they were set).
func checkJobHistory(p *problems, key string, h JobHistory, skip map[string]bool) {
	if h.MaxAge < 0 && !skip["max_age"] {
		p.add(key+".max_age", "must not be negative (0s: no age limit), got %s", h.MaxAge)
	}
	if h.MaxRuns < 0 && !skip["max_runs"] {
		p.add(key+".max_runs", "must not be negative (0: no limit), got %d", h.MaxRuns)
	}
}

// jobInheritedHistory returns which keys of job's history block came from defaults.
func jobInheritedHistory(job Job) map[string]bool {
	skip := map[string]bool{}
	for _, k := range jobHistoryKeys {
		skip[k] = job.inherited["history."+k]
	}
	return skip
}

// historyFields are the fields of a job's line in TableHash for its retention, inherited or its
// own: replicas that keep different histories prune the ledger differently.
func historyFields(h JobHistory) []any {
	return []any{h.MaxAge, h.MaxRuns}
}
