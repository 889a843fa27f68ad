package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"scheduler"

	"scheduler/internal/jobs"
	"scheduler/internal/kinds"
)

// buildTable turns the configured jobs into the runner's table: each job's schedule, as
// Validate parsed it in its zone, and an executor per job type. Builtin and sql jobs write
// through the fenced transaction the runner binds to each attempt, so building needs no store. A job's constructor refusing a value comes back as a problem naming the
// job's key (or the defaults key it inherited), and the job is left out. A job whose schedule
// or zone Validate refused has no schedule and is left out too: Validate reported it.
func buildTable(cfg *Config, client *http.Client, environ []string) ([]jobs.Spec, []Problem) {
	var p problems
	specs := make([]jobs.Spec, 0, len(cfg.Jobs))
	for i, j := range cfg.Jobs {
		if _, known := typeKeys[j.Type]; !known {
			continue // Validate reported the type
		}
		exec, err := newExecutor(j, client, environ)
		if err != nil {
			jobProblems(&p, fmt.Sprintf("jobs[%d]", i), j, err)
			continue
		}
		if j.schedule == nil {
			continue
		}
		specs = append(specs, jobs.Spec{
			Name: j.Name, Schedule: j.schedule, Executor: exec,
			Timeout: j.Timeout, Retries: j.Retries, RetryBackoff: j.RetryBackoff,
			Overlap: jobs.Overlap(j.Overlap), Misfire: jobs.Misfire(j.Misfire),
			Catchup: j.Catchup, Jitter: j.Jitter, Enabled: j.Enabled,
		})
	}
	return specs, p.list
}

// jobProblems adds the problems of a job's constructor error, joined ones each on its own, at
// key paths under key: a constructor names the key it refuses ("env.SCHEDULER_JOB: ..."). A key
// the job inherited is reported under defaults instead.
func jobProblems(p *problems, key string, j Job, err error) {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			jobProblems(p, key, j, e)
		}
		return
	}
	msg := err.Error()
	sub, rest, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(sub, " \t") {
		p.add(key, "%s", msg)
		return
	}
	if top, _, _ := strings.Cut(strings.SplitN(sub, "[", 2)[0], "."); j.inherited[top] {
		key = "defaults"
	}
	p.add(key+"."+sub, "%s", rest)
}

// newExecutor builds the executor of job j. Its error names the keys at fault, each as
// "KEY: message", joined.
func newExecutor(j Job, client *http.Client, environ []string) (scheduler.Executor, error) {
	switch j.Type {
	case "builtin":
		switch j.Builtin {
		case "invoices":
			p, errs := kinds.ParseInvoicesParams(j.Params)
			if len(errs) > 0 {
				return nil, paramErrors(errs)
			}
			return kinds.NewInvoices(p)
		case "stock":
			if _, errs := kinds.ParseStockParams(j.Params); len(errs) > 0 {
				return nil, paramErrors(errs)
			}
			return kinds.NewStock(time.Now), nil
		}
		return nil, fmt.Errorf("builtin: unknown builtin %q (known: %s)", j.Builtin, strings.Join(kinds.BuiltinNames(), ", "))
	case "exec":
		// Whether the daemon may switch users is checked by `run` (checkUserSwitch), not here:
		// it is a property of the process, and `validate` may well run as another user.
		id, err := lookupIdentity(j)
		if err != nil {
			return nil, err
		}
		cfg := kinds.ExecConfig{Command: j.Command, Env: j.Env, Dir: j.Dir, Environ: environ}
		if id != nil {
			if cfg.Environ == nil {
				cfg.Environ = os.Environ()
			}
			cfg.Environ, cfg.Credential = id.environ(cfg.Environ), id.cred
		}
		return kinds.NewExec(cfg)
	case "sql":
		return kinds.NewSQL(kinds.SQLConfig{Statements: j.SQL, Role: j.Role})
	case "http":
		return kinds.NewHTTP(client, kinds.HTTPConfig{URL: j.URL, Method: j.Method, Headers: j.Headers, FollowRedirects: j.FollowRedirects})
	}
	return nil, fmt.Errorf("type: unknown type %q", j.Type)
}

// paramErrors joins a builtin's parameter problems as "params.NAME: message" errors, or
// "builtin: message" for one about the builtin itself.
func paramErrors(errs []kinds.ParamError) error {
	out := make([]error, len(errs))
	for i, e := range errs {
		if e.Param == "" {
			out[i] = fmt.Errorf("builtin: %s", e.Msg)
		} else {
			out[i] = fmt.Errorf("params.%s: %s", e.Param, e.Msg)
		}
	}
	return errors.Join(out...)
}

// roleWithoutJobDSN names a sql job that has a role while sql jobs run on the scheduler's own
// connection, or returns "".
func roleWithoutJobDSN(cfg *Config) string {
	if cfg.Store.JobDSN != "" {
		return ""
	}
	for _, j := range cfg.Jobs {
		if j.Type == "sql" && j.Role != "" {
			return j.Name
		}
	}
	return ""
}

// tableHash is a short stable digest of the job table, which replicas publish so that status
// can warn when they run different configurations.
func tableHash(cfg *Config) string {
	lines := make([]string, 0, len(cfg.Jobs))
	for _, j := range cfg.Jobs {
		lines = append(lines, fmt.Sprintf("%s|%s|%s|%s|%s|%v|%q|%s|%q|%s|%s|%s|%s|%v|%d|%s|%s|%s|%s|%s|%v",
			j.Name, j.Schedule, j.Timezone, j.Type, j.Builtin, sortedMap(j.Params), j.Command, sortedMap(j.Env), j.Dir,
			j.SQL, j.Role, j.URL, j.Method, sortedMap(j.Headers), j.Retries, j.Timeout, j.RetryBackoff, j.Overlap+"/"+j.Misfire, j.Catchup, j.Jitter, j.Enabled)+
			securityHash(j)+historyHash(j.History))
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:6])
}

// securityHash is the part of a job's line in tableHash for the keys that decide what the job
// may reach: who it runs as, where its requests may be redirected.
func securityHash(j Job) string {
	return fmt.Sprintf("|%s|%s|%v", j.User, j.Group, j.FollowRedirects)
}

func sortedMap[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v;", k, m[k])
	}
	return b.String()
}
