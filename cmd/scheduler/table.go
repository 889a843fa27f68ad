package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"scheduler"
	"scheduler/internal/jobs"
	"scheduler/internal/kinds"
	"scheduler/internal/schedule"
)

// buildTable turns the configured jobs into the runner's table: schedules parsed in their
// zones and an executor per job type. Builtin and sql jobs write through the fenced transaction
// of each attempt, which the runner binds to the store, so building the table needs no store.
func buildTable(cfg *Config, client *http.Client, environ []string) ([]jobs.Spec, error) {
	specs := make([]jobs.Spec, 0, len(cfg.Jobs))
	for _, j := range cfg.Jobs {
		loc, err := time.LoadLocation(j.Timezone)
		if err != nil {
			return nil, fmt.Errorf("job %q: timezone: %w", j.Name, err)
		}
		sched, err := schedule.Parse(j.Schedule, loc)
		if err != nil {
			return nil, fmt.Errorf("job %q: schedule: %w", j.Name, err)
		}
		exec, err := newExecutor(j, client, environ)
		if err != nil {
			return nil, fmt.Errorf("job %q: %w", j.Name, err)
		}
		specs = append(specs, jobs.Spec{
			Name: j.Name, Schedule: sched, Executor: exec,
			Timeout: j.Timeout, Retries: j.Retries, RetryBackoff: j.RetryBackoff,
			Overlap: jobs.Overlap(j.Overlap), Misfire: jobs.Misfire(j.Misfire),
			Catchup: j.Catchup, Jitter: j.Jitter, Enabled: j.Enabled,
		})
	}
	return specs, nil
}

func newExecutor(j Job, client *http.Client, environ []string) (scheduler.Executor, error) {
	switch j.Type {
	case "builtin":
		switch j.Builtin {
		case "invoices":
			p, errs := kinds.ParseInvoicesParams(j.Params)
			if len(errs) > 0 {
				return nil, fmt.Errorf("params: %v", errs)
			}
			return kinds.NewInvoices(p)
		case "stock":
			return kinds.NewStock(time.Now), nil
		}
		return nil, fmt.Errorf("unknown builtin %q", j.Builtin)
	case "exec":
		id, err := resolveIdentity(j, currentUserSwitch())
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
	return nil, fmt.Errorf("unknown type %q", j.Type)
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
			securityHash(j))
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
