package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strconv"
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
	// Each line is a sequence of length-prefixed fields, so the lines need no separator of
	// their own: the newline only makes the text readable.
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:6])
}

// JobDigest is a short stable digest of one job as configured, of everything TableHash covers
// of it: two replicas whose digests of a job differ run it differently.
func JobDigest(j Job) string {
	sum := sha256.Sum256([]byte(jobLine(j)))
	return hex.EncodeToString(sum[:6])
}

// jobLine is everything about job j that changes its behaviour, as one line of length-prefixed
// fields (lineEncoder): two jobs that differ anywhere, even in a value that holds what a
// separator would be (env {A: "1;B=2"} and env {A: "1", B: "2"}), have different lines.
func jobLine(j Job) string {
	var e lineEncoder
	e.values(j.Name, j.Schedule, j.Timezone, j.Type, j.Builtin, j.Params, j.Command, j.Env, j.Dir,
		j.SQL, j.Role, j.URL, j.Method, j.Headers, j.Retries, j.Timeout, j.RetryBackoff, j.Overlap, j.Misfire,
		j.Catchup, j.Jitter, j.Enabled)
	e.values(securityFields(j)...)
	e.values(historyFields(j.History)...)
	e.values(j.Notify)
	return e.b.String()
}

// securityFields are the fields of a job's line in TableHash for the keys that decide what the
// job may reach: who it runs as, where its requests may be redirected.
func securityFields(j Job) []any {
	return []any{j.User, j.Group, j.FollowRedirects}
}

// lineEncoder writes values as an unambiguous text: a string as its length, a colon and its
// bytes; a list or mapping as its length, then its elements (a mapping's in the order of its
// keys); a struct as its fields; a value of an interface type (a builtin's parameter) with its
// type, so that "1" and 1 differ too.
type lineEncoder struct{ b strings.Builder }

func (e *lineEncoder) values(vs ...any) {
	for _, v := range vs {
		e.value(reflect.ValueOf(v))
	}
}

func (e *lineEncoder) field(s string) {
	e.b.WriteString(strconv.Itoa(len(s)))
	e.b.WriteByte(':')
	e.b.WriteString(s)
}

func (e *lineEncoder) value(v reflect.Value) {
	if !v.IsValid() {
		e.field("nil")
		return
	}
	switch v.Kind() {
	case reflect.String:
		e.field(v.String())
	case reflect.Slice, reflect.Array:
		e.field(strconv.Itoa(v.Len()))
		for i := range v.Len() {
			e.value(v.Index(i))
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(a, b int) bool { return fmt.Sprint(keys[a]) < fmt.Sprint(keys[b]) })
		e.field(strconv.Itoa(len(keys)))
		for _, k := range keys {
			e.value(k)
			e.value(v.MapIndex(k))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			e.value(v.Field(i))
		}
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			e.field("nil")
			return
		}
		if v.Kind() == reflect.Interface {
			e.field(v.Elem().Type().String())
		}
		e.value(v.Elem())
	default:
		// A number or a bool: fmt writes each one way only.
		e.field(fmt.Sprint(v))
	}
}
