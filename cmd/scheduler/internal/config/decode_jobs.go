package config

import (
	"fmt"
	"strings"

	"github.com/go-viper/mapstructure/v2"

	"scheduler/cmd/scheduler/internal/config/internal/decode"
	"scheduler/cmd/scheduler/internal/config/internal/inherit"
	"scheduler/cmd/scheduler/internal/config/internal/keypath"
)

// decodeJobs decodes list, the jobs as parsed, into cfg.Jobs one at a time, each with the
// defaults merged in just before: a table of many jobs never holds every job's mapping with
// every default at once, and each mapping is let go once its job is decoded. It returns the
// jobs' problems and the decoder's errors, each under its job; err if no decoder was made.
func decodeJobs(cfg *Config, list []any, defaults map[string]any) (problems []Problem, errs []error, err error) {
	in := inherit.New(defaults, jobKeys())
	cfg.Jobs = make([]Job, len(list))
	for i, item := range list {
		list[i] = nil
		if item == nil { // any other entry that is not a mapping is the decoder's to report
			problems = append(problems, Problem{Key: fmt.Sprintf("jobs[%d]", i), Msg: "empty job entry"})
		}
		inherited := in.Merge(item)
		dec, err := newDecoder(&cfg.Jobs[i])
		if err != nil {
			return nil, nil, err
		}
		if err := dec.Decode(item); err != nil {
			errs = append(errs, &jobDecodeError{index: i, err: err})
		}
		cfg.Jobs[i].inherited = inherited
	}
	return problems, errs, nil
}

// newDecoder is the decoder of a configuration, or of one of its jobs, into result.
func newDecoder(result any) (*mapstructure.Decoder, error) {
	return mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			decode.Duration,
			decode.Int,
			decode.Bool,
		),
		ErrorUnused: true,
		Result:      result,
	})
}

// jobDecodeError is the decoder's error for the job at index, decoded on its own: its key paths
// are the job's, and decodeProblems puts them under jobs[index].
type jobDecodeError struct {
	index int
	err   error
}

func (e *jobDecodeError) Error() string { return fmt.Sprintf("jobs[%d]: %v", e.index, e.err) }

func (e *jobDecodeError) Unwrap() error { return e.err }

// jobDefaults returns the `defaults` section, taking out the key no job may inherit.
func jobDefaults(raw map[string]any) (map[string]any, []Problem) {
	defaults, _ := raw["defaults"].(map[string]any)
	var problems []Problem
	if _, ok := defaults["name"]; ok {
		delete(defaults, "name")
		problems = append(problems, Problem{Key: "defaults.name", Msg: "a name cannot be shared by all jobs"})
	}
	return defaults, problems
}

// inheritedKey reports whether the value of the decoder's problem p came from elsewhere in the
// file, where the decoder reports a problem with it once: a job's key from defaults, a key of
// defaults.history from the top-level history block. A value under an inherited key (a default
// params mapping's entry) is inherited with it; an unknown key is inherited only when that very
// key was copied (a key of defaults.history), so that a job's own unknown key is never taken
// for a default's.
func inheritedKey(cfg *Config, historyFromTop map[string]bool, p Problem) bool {
	if k, ok := strings.CutPrefix(p.Key, "defaults.history."); ok {
		return historyFromTop[k]
	}
	var i int
	if n, err := fmt.Sscanf(p.Key, "jobs[%d].", &i); n != 1 || err != nil || i < 0 || i >= len(cfg.Jobs) {
		return false
	}
	_, rest, _ := strings.Cut(p.Key, "].")
	if strings.HasPrefix(p.Msg, unknownKey) {
		return cfg.Jobs[i].inherited[rest]
	}
	for ; rest != ""; rest = keypath.Parent(rest) {
		if cfg.Jobs[i].inherited[rest] {
			return true
		}
	}
	return false
}
