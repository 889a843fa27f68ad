package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"scheduler/internal/jobs"
)

// buildTable turns the configured jobs into the runner's table: each job's schedule, as
// Validate parsed it in its zone, and an executor per job type. Builtin and sql jobs write
// through the fenced transaction the runner binds to each attempt, so building needs no store.
// Each constructor applies its kind's Check, which Validate has run already; what it refuses
// beyond that (a user whose groups cannot be read) comes back as a problem naming the job's key
// (or the defaults key it inherited), and the job is left out. A job whose schedule or zone
// Validate refused has no schedule and is left out too: Validate reported it.
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
			Catchup: j.Catchup, Jitter: j.Jitter, Enabled: j.Enabled, Notify: j.Notify.Policy(j.Name).Hook(),
		})
	}
	return specs, p.list
}

// RoleWithoutJobDSN names a sql job that has a role while sql jobs run on the scheduler's own
// connection, or returns "".
func RoleWithoutJobDSN(cfg *Config) string {
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

// TableHash is a short stable digest of the job table, which replicas publish so that status
// can warn when they run different configurations.
func TableHash(cfg *Config) string {
	lines := make([]string, 0, len(cfg.Jobs))
	for _, j := range cfg.Jobs {
		lines = append(lines, jobLine(j))
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:6])
}

// JobDigest is a short stable digest of one job as configured, of everything TableHash covers
// of it: two replicas whose digests of a job differ run it differently.
func JobDigest(j Job) string {
	sum := sha256.Sum256([]byte(jobLine(j)))
	return hex.EncodeToString(sum[:6])
}

// jobLine is everything about job j that changes its behaviour, as one line.
func jobLine(j Job) string {
	return fmt.Sprintf("%s|%s|%s|%s|%s|%v|%q|%s|%q|%s|%s|%s|%s|%v|%d|%s|%s|%s|%s|%s|%v",
		j.Name, j.Schedule, j.Timezone, j.Type, j.Builtin, sortedMap(j.Params), j.Command, sortedMap(j.Env), j.Dir,
		j.SQL, j.Role, j.URL, j.Method, sortedMap(j.Headers), j.Retries, j.Timeout, j.RetryBackoff, j.Overlap+"/"+j.Misfire, j.Catchup, j.Jitter, j.Enabled) +
		securityHash(j) + historyHash(j.History) + fmt.Sprintf("|%+v", j.Notify)
}

// securityHash is the part of a job's line in TableHash for the keys that decide what the job
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
