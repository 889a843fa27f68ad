package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"scheduler/cmd/scheduler/internal/config/internal/decode"
	"scheduler/cmd/scheduler/internal/config/internal/keypath"
	"scheduler/cmd/scheduler/internal/suggest"
	"scheduler/internal/kinds"
)

// runVariables are the SCHEDULER_* variables the scheduler sets for an exec job. A job may run
// the scheduler's own command line, which then sees them: they are not configuration, and not
// errors either.
var runVariables = []string{kinds.EnvFenceToken, kinds.EnvJob, kinds.EnvScheduledAt, kinds.EnvRunID, kinds.EnvAttempt, kinds.EnvRunSecret}

// envName is the variable that sets a key path: SCHEDULER_ + the path in upper case, dots as
// underscores.
func envName(key string) string {
	return envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// envKeys is every key path a variable may set: the leaves of the Config type, from their
// mapstructure tags, and the keys the file and the defaults spelled out (such as the entries of
// a params mapping). Jobs are a list and cannot be set from the environment.
func envKeys(settings []string) []string {
	seen := map[string]bool{}
	var keys []string
	add := func(k string) {
		if !seen[k] && k != "jobs" && !strings.HasPrefix(k, "jobs.") {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, k := range keypath.Leaves(reflect.TypeFor[Config]()) {
		add(k)
	}
	for _, k := range settings {
		add(k)
	}
	sort.Strings(keys)
	return keys
}

// unknownVariables reports every SCHEDULER_* variable of env that sets no key, with the
// closest known name when one is near, as a typo would be.
func unknownVariables(env map[string]string, settings []string) []Problem {
	known := map[string]bool{}
	var names []string
	for _, k := range envKeys(settings) {
		known[envName(k)] = true
		names = append(names, envName(k))
	}
	for _, n := range runVariables {
		known[n] = true
	}
	var unknown []string
	for name := range env {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	var problems []Problem
	for _, name := range unknown {
		msg := "unknown variable: no configuration key has this name"
		switch near := suggest.Nearest(name, names); {
		case name == envPrefix+"_JOBS" || strings.HasPrefix(name, envPrefix+"_JOBS_"):
			msg = "jobs cannot be set from the environment (they are a list): write them in the configuration file; `defaults` keys such as SCHEDULER_DEFAULTS_TIMEOUT apply to every job"
		case near != "":
			msg += fmt.Sprintf("; did you mean %s?", near)
		}
		problems = append(problems, Problem{Key: name, Msg: msg})
	}
	return problems
}

// blameVariables names the variable behind each problem whose key, or a key under it (a job's
// inherited one: its defaults.* key), a variable of cfg set: the value came from there, not
// from the file. It reports whether any problem lies in the environment, an unknown variable
// included.
func blameVariables(problems []Problem, cfg *Config) ([]Problem, bool) {
	out, env := make([]Problem, len(problems)), false
	for i, p := range problems {
		out[i] = p
		if strings.HasPrefix(p.Key, envPrefix+"_") {
			env = true
			continue
		}
		key := p.Key
		if _, rest, ok := strings.Cut(key, "]."); ok && inheritedKey(cfg, nil, p) {
			key = "defaults." + rest
		}
		for ; key != ""; key = keypath.Parent(key) {
			if name, ok := cfg.fromEnv[key]; ok {
				out[i].Msg = fmt.Sprintf("set by %s: %s", name, p.Msg)
				env = true
				break
			}
		}
	}
	return out, env
}

// listKeys are the key paths of the configuration's lists, from the Config type: each one a
// variable may set, as one comma-separated string.
var listKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[Config]()
	keypath.Walk(t, "", nil, func(key string, index []int, leaf bool) bool {
		if leaf && t.FieldByIndex(index).Type.Kind() == reflect.Slice {
			keys[key] = true
		}
		return true
	})
	return keys
}()

// splitLists splits, in raw, the value of every list key that a variable of fromEnv set, and
// reports an empty entry under its key (blamed on the variable later).
func splitLists(raw map[string]any, fromEnv map[string]string) []Problem {
	var problems []Problem
	for key := range fromEnv {
		if !listKeys[key] {
			continue
		}
		block, name := raw, key
		for head, rest, ok := strings.Cut(key, "."); ok; head, rest, ok = strings.Cut(rest, ".") {
			block, _ = block[head].(map[string]any)
			name = rest
		}
		s, ok := block[name].(string)
		if !ok {
			continue
		}
		list, err := decode.List(s)
		if err != nil {
			problems = append(problems, Problem{Key: key, Msg: err.Error()})
		}
		block[name] = list
	}
	sort.Slice(problems, func(i, j int) bool { return problems[i].Key < problems[j].Key })
	return problems
}
