package config

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"scheduler"

	"scheduler/internal/kinds"
)

// typeKeys are the keys that belong to one job type only.
var typeKeys = map[string][]string{
	"builtin": {"builtin", "params"},
	"exec":    {"command", "env", "dir", "user", "group"},
	"sql":     {"sql", "role"},
	"http":    {"url", "method", "headers", "follow_redirects"},
}

// Each xConfig maps a job's settings onto its kind's configuration, whose Check is the one
// check of those settings and whose constructor builds the job from it.

func execConfig(j JobSpec, environ []string) kinds.ExecConfig {
	return kinds.ExecConfig{Command: j.Command, Env: j.Env, Dir: j.Dir, User: j.User, Group: j.Group, Environ: environ}
}

func sqlConfig(j JobSpec) kinds.SQLConfig {
	return kinds.SQLConfig{Statements: j.SQL, Role: j.Role}
}

func httpConfig(j JobSpec) kinds.HTTPConfig {
	return kinds.HTTPConfig{URL: j.URL, Method: j.Method, Headers: j.Headers, FollowRedirects: j.FollowRedirects}
}

func builtinConfig(j JobSpec) kinds.BuiltinConfig {
	return kinds.BuiltinConfig{Name: j.Builtin, Params: j.Params}
}

// kindProblems are the problems the kind of j finds in its settings, keys relative to the job;
// none for an unknown type, which the job's own check reports.
func kindProblems(j JobSpec) []kinds.Problem {
	switch j.Type {
	case "builtin":
		return builtinConfig(j).Check()
	case "exec":
		return execConfig(j, nil).Check()
	case "sql":
		return sqlConfig(j).Check()
	case "http":
		return httpConfig(j).Check()
	}
	return nil
}

// newExecutor builds the executor of job j. Its error joins a kinds.Problem per key at fault.
// Whether the daemon may switch users is checked by `run` (checkUserSwitch), not here: it is a
// property of the process, and `validate` may well run as another user.
func newExecutor(j Job, client *http.Client, environ []string) (scheduler.Executor, error) {
	switch j.Type {
	case "builtin":
		return kinds.NewBuiltin(builtinConfig(j.JobSpec), time.Now)
	case "exec":
		return kinds.NewExec(execConfig(j.JobSpec, environ))
	case "sql":
		return kinds.NewSQL(sqlConfig(j.JobSpec))
	case "http":
		return kinds.NewHTTP(client, httpConfig(j.JobSpec))
	}
	return nil, kinds.Problem{Key: "type", Message: fmt.Sprintf("unknown type %q", j.Type)}
}

// jobProblems adds the problems of a job's constructor error, joined ones each on its own, at
// key paths under key. A key the job inherited is reported under defaults instead.
func jobProblems(p *problems, key string, j Job, err error) {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			jobProblems(p, key, j, e)
		}
		return
	}
	var kp kinds.Problem
	if !errors.As(err, &kp) || kp.Key == "" {
		p.add(key, "%v", err)
		return
	}
	p.add(kindKey(key, j, kp.Key), "%s", kp.Message)
}

// kindKey is the key path of a kind's problem at sub for job j at key: under the job, or under
// defaults when the job inherited the value.
func kindKey(key string, j Job, sub string) string {
	if j.inherited[kinds.TopKey(sub)] {
		key = "defaults"
	}
	return key + "." + sub
}

// setKeys says which type-specific keys j sets.
func setKeys(j JobSpec) map[string]bool {
	return map[string]bool{
		"builtin": j.Builtin != "", "params": len(j.Params) > 0,
		"command": len(j.Command) > 0, "env": len(j.Env) > 0, "dir": j.Dir != "",
		"user": j.User != "", "group": j.Group != "",
		"sql": j.SQL != "", "role": j.Role != "",
		"url": j.URL != "", "method": j.Method != "", "headers": len(j.Headers) > 0,
		"follow_redirects": j.FollowRedirects,
	}
}

// validateDefaultKinds checks the type-specific keys `defaults` sets with the kind each belongs
// to, so that a bad default is reported once, under defaults.KEY, whichever jobs inherit it.
func validateDefaultKinds(p *problems, d JobSpec) {
	set := setKeys(d)
	for _, typ := range []string{"builtin", "exec", "sql", "http"} {
		d := d
		d.Type = typ
		for _, kp := range kindProblems(d) {
			if top := kinds.TopKey(kp.Key); set[top] && slices.Contains(typeKeys[typ], top) {
				p.add("defaults."+kp.Key, "%s", kp.Message)
			}
		}
	}
}
