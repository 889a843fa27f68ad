package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

const historyJobs = `
jobs:
  - name: plain
    schedule: "@hourly"
    type: sql
    sql: select 1
  - name: own
    schedule: "@hourly"
    type: sql
    sql: select 1
    history: {max_runs: 7}
`

func TestLoad_History(t *testing.T) {
	type limits struct {
		age  time.Duration
		runs int
	}
	for _, tc := range []struct {
		name       string
		yaml       string
		env        []string
		plain, own limits
	}{
		{"Defaults", historyJobs, nil, limits{2160 * time.Hour, 10000}, limits{2160 * time.Hour, 7}},
		{"TopLevel", "history: {max_age: 48h, max_runs: 0}\n" + historyJobs, nil,
			limits{48 * time.Hour, 0}, limits{48 * time.Hour, 7}},
		{"DefaultsOverTopLevel", "history: {max_age: 48h, max_runs: 50}\ndefaults:\n  history: {max_age: 24h}\n" + historyJobs, nil,
			limits{24 * time.Hour, 50}, limits{24 * time.Hour, 7}},
		{"JobKeepsTheOtherKeyOfDefaults", "defaults:\n  history: {max_age: 1h, max_runs: 3}\n" + historyJobs, nil,
			limits{time.Hour, 3}, limits{time.Hour, 7}},
		{"Environment", historyJobs, []string{"SCHEDULER_HISTORY_MAX_AGE=72h", "SCHEDULER_HISTORY_MAX_RUNS=9"},
			limits{72 * time.Hour, 9}, limits{72 * time.Hour, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(configtest.Write(t, tc.yaml), tc.env)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []limits{tc.plain, tc.own} {
				h := cfg.Jobs[i].History
				if got := (limits{h.MaxAge, h.MaxRuns}); got != want {
					t.Errorf("job %s: history %+v, want %+v", cfg.Jobs[i].Name, got, want)
				}
			}
		})
	}
	t.Run("PruneKeys", func(t *testing.T) {
		cfg, err := Load(configtest.Write(t, "history: {prune_interval: 1m, prune_batch: 50, prune_pause: 0s}\n"+historyJobs), nil)
		if err != nil {
			t.Fatal(err)
		}
		if h := cfg.History; h.PruneInterval != time.Minute || h.PruneBatch != 50 || h.PrunePause != 0 {
			t.Fatalf("history = %+v", h)
		}
	})
}

const thirdJob = "  - name: third\n    schedule: '@hourly'\n    type: sql\n    sql: select 1\n"

func TestLoad_HistoryInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []string // each problem reported exactly once
	}{
		{"NegativeJobAge", historyJobs + thirdJob + "    history: {max_age: -1h}\n", []string{"jobs[2].history.max_age: must not be negative"}},
		{"NegativeDefaultRuns", "defaults:\n  history: {max_runs: -1}\n" + historyJobs, []string{"defaults.history.max_runs: must not be negative"}},
		{"NegativeTopAge", "history: {max_age: -2h}\n" + historyJobs, []string{"history.max_age: must not be negative"}},
		{"ZeroBatch", "history: {prune_batch: 0}\n" + historyJobs, []string{"history.prune_batch: must be between 1 and 10000"}},
		{"HugeBatch", "history: {prune_batch: 1000000}\n" + historyJobs, []string{"history.prune_batch: must be between 1 and 10000"}},
		{"ZeroInterval", "history: {prune_interval: 0s}\n" + historyJobs, []string{"history.prune_interval: must be at least 100ms, got 0s"}},
		{"TinyInterval", "history: {prune_interval: 1ns}\n" + historyJobs, []string{"history.prune_interval: must be at least 100ms, got 1ns"}},
		{"NegativePause", "history: {prune_pause: -1s}\n" + historyJobs, []string{"history.prune_pause: must not be negative"}},
		{"AgeNoUnit", "defaults:\n  history: {max_age: 90}\n" + historyJobs, []string{"defaults.history.max_age"}},
		{"UnknownJobHistoryKey", historyJobs + thirdJob + "    history: {keep: 3}\n", []string{"jobs[2].history.keep: unknown key"}},
		{"HistoryNotAMapping", "defaults:\n  history: 5\n" + historyJobs, []string{"defaults.history"}},
		{"BadPerJob", "metrics: {per_job: sometimes}\n" + historyJobs, []string{"metrics.per_job: must be one of auto, on, off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(configtest.Write(t, tc.yaml), nil)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *Error", err)
			}
			for _, w := range tc.want {
				if n := strings.Count(ce.Error(), w); n != 1 {
					t.Errorf("%q appears %d times, want once:\n%v", w, n, ce)
				}
			}
		})
	}
}
