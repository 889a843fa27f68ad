package config

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"scheduler/internal/control"
	"scheduler/internal/jobs"
	"scheduler/internal/kinds"
)

// Loaded is the configuration read once and the runner's table built from it: what `validate`
// checks is what `run` starts with and what a reload swaps in.
type Loaded struct {
	// Config is the configuration as read and validated.
	Config *Config
	// Table is the runner's table built from Config.
	Table []jobs.Spec
	// Hash is the table's digest, which replicas publish (TableHash of Config).
	Hash string
}

// LoadTable reads the file at path once, with the SCHEDULER_* variables of environ, validates
// it and builds every job of its table, connecting nowhere. The jobs write through the
// fenced transaction the runner binds to each attempt, so building them needs no store. Every problem, of the file or of a job's
// build, comes back in one *Error, each naming its key path.
func LoadTable(path string, environ []string) (*Loaded, error) {
	cfg, problems := checkConfig(path, environ)
	var table []jobs.Spec
	if cfg != nil {
		var built []Problem
		table, built = buildTable(cfg, &http.Client{}, environ)
		problems = append(problems, uncovered(problems, built)...)
	}
	if len(problems) > 0 {
		env := false
		if cfg != nil {
			problems, env = blameVariables(problems, cfg)
		}
		return nil, &Error{File: path, Problems: problems, Env: env}
	}
	return &Loaded{Config: cfg, Table: table, Hash: TableHash(cfg)}, nil
}

// OverrideNode makes node (the --node flag) the replica's name when it is set, checked as the
// file's node is.
func (l *Loaded) OverrideNode(node string) error {
	if node == "" {
		return nil
	}
	if msg := control.NodeProblem(node); msg != "" {
		return fmt.Errorf("--node: %s, got %.200q", msg, node)
	}
	l.Config.Node = node
	return nil
}

// LoadForRun is the daemon's read of the configuration, at start and on a reload: the table
// LoadTable builds for `validate` too, then the one check of the process itself, whether it may
// run the table's exec jobs as the users they name (switcher).
func LoadForRun(path string, environ []string, switcher kinds.UserSwitch) (*Loaded, error) {
	l, err := LoadTable(path, environ)
	if err != nil {
		return nil, err
	}
	if err := checkUserSwitch(l.Config, switcher); err != nil {
		return nil, err
	}
	return l, nil
}

// uncovered returns the problems of add whose key neither has a problem in have nor lies under
// or over one: a job's constructor that meets a value Validate already refused says so again
// in its own words, and once is enough. Repeats within add (a default every job inherits) are
// dropped too.
func uncovered(have, add []Problem) []Problem {
	var out []Problem
	for _, a := range add {
		if !slices.ContainsFunc(have, func(h Problem) bool { return relatedKeys(h.Key, a.Key) }) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// relatedKeys reports whether key paths a and b are the same or one lies under the other
// (jobs[0].env and jobs[0].env.HOME; jobs[0].command and jobs[0].command[0]).
func relatedKeys(a, b string) bool {
	return underKey(a, b) || underKey(b, a)
}

// underKey reports whether key path k is parent or lies under it.
func underKey(k, parent string) bool {
	return strings.HasPrefix(k, parent) && (len(k) == len(parent) || k[len(parent)] == '.' || k[len(parent)] == '[')
}
