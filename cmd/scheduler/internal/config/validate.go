package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"scheduler/cmd/scheduler/internal/config/internal/filelimit"
	"scheduler/cmd/scheduler/internal/config/internal/tokenfile"
	"scheduler/internal/control"
	"scheduler/internal/schedule"
)

var (
	jobNameRE    = regexp.MustCompile(`^[a-z0-9_-]+$`)
	identifierRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// logLevels are the values of log.level, each a zapcore level of the same name.
var logLevels = []string{"debug", "info", "warn", "error"}

// Validate reports every problem in the configuration, each with its key path, and keeps each
// job's schedule as it parsed it, for the table. It connects nowhere and reads only the TLS
// files it names. The settings of a job's kind are checked by the kind itself (kindProblems).
func (c *Config) Validate() []Problem { return c.validateAt(time.Now()) }

// validateAt is Validate with the instant from which schedules are looked at.
func (c *Config) validateAt(now time.Time) []Problem {
	var p problems
	if msg := control.NodeProblem(c.Node); msg != "" {
		p.add("node", "%s, got %.200q", msg, c.Node)
	}
	switch {
	case c.DataDir == "":
		p.add("data_dir", "must not be empty")
	case strings.IndexByte(c.DataDir, 0) >= 0:
		p.add("data_dir", "contains a NUL byte") // no path has one: run could create nothing there
	}
	c.validateEtcd(&p)
	c.validateBackend(&p)
	if len(c.Etcd.Endpoints) > 0 && c.Store.DSN == "" && !c.SingleNode && c.Election.Backend == BackendEtcd {
		p.add("store.dsn", "is empty while etcd.endpoints is set: each host would keep its own SQLite ledger and fence, "+
			"so every replica could run every slot; set store.dsn to the shared PostgreSQL, or single_node: true for a deployment of one replica")
	}
	if !strings.HasPrefix(c.Election.Prefix, "/") || strings.HasSuffix(c.Election.Prefix, "/") {
		p.add("election.prefix", "must start with / and not end with /, got %q", c.Election.Prefix)
	}
	switch ttl := c.Election.TTL; {
	case ttl < time.Second:
		p.add("election.ttl", "must be at least 1s, got %s", ttl)
	case ttl%time.Second != 0:
		p.add("election.ttl", "must be a whole number of seconds (etcd leases count seconds), got %s", ttl)
	case ttl > MaxEtcdTTL && c.Election.Backend == BackendEtcd:
		p.add("election.ttl", "must be at most %s, the longest lease etcd grants, got %s", MaxEtcdTTL, ttl)
	}
	if c.Store.DSN != "" {
		if msg := dsnProblem(c.Store.DSN); msg != "" {
			p.add("store.dsn", "%s", msg)
		}
	}
	c.validateJobStore(&p)
	if !identifierRE.MatchString(c.Store.Schema) || len(c.Store.Schema) > 63 {
		p.add("store.schema", "must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 bytes), got %q", c.Store.Schema)
	} else if strings.HasPrefix(c.Store.Schema, "pg_") {
		p.add("store.schema", "%s: names beginning pg_ are PostgreSQL's own, `migrate` could not create the schema", c.Store.Schema)
	}
	if c.HTTP.Addr != "" {
		if msg := checkHostPort(c.HTTP.Addr); msg != "" {
			p.add("http.addr", "must be host:port (or empty to disable), got %q: %s", c.HTTP.Addr, msg)
		}
	}
	if token, err := tokenfile.Read(c.HTTP.AdminTokenFile, filelimit.Open); err != nil {
		p.add("http.admin_token_file", "%v", err)
	} else {
		c.HTTP.AdminToken = token
	}
	// zap reads more (WARN, dpanic, fatal); the key takes what it documents, in lower case, as
	// every other enumerated key does.
	p.enum("log.level", c.Log.Level, logLevels...)
	p.enum("log.format", c.Log.Format, "json", "console", "auto")
	p.nonNegative("shutdown_grace", c.ShutdownGrace)
	validateHistory(&p, c.History)
	c.validateOutbox(&p)
	notifyTo, canMail := c.Outbox.Webhook.Hosts, c.Outbox.SMTP.Addr != "" || c.Outbox.Log
	c.Defaults.Notify.Report("defaults.notify", notifyTo, canMail, nil, p.once)
	for i, j := range c.Jobs { // a job's inherited keys are reported under defaults.notify
		j.Notify.Report(fmt.Sprintf("jobs[%d].notify", i), notifyTo, canMail, func(k string) bool { return j.inherited["notify."+k] }, p.once)
	}
	p.enum("metrics.per_job", c.Metrics.PerJob, "auto", "on", "off")
	validateDefaults(&p, c.Defaults)
	checkJobHistory(&p, "defaults.history", c.Defaults.History, c.historyFromTop)

	seen := map[string]int{}
	gaps := schedule.NewCache(now)
	for i, job := range c.Jobs {
		key := fmt.Sprintf("jobs[%d]", i)
		if first, dup := seen[job.Name]; dup && job.Name != "" {
			p.add(key+".name", "duplicate job name %q (also jobs[%d])", job.Name, first)
		} else {
			seen[job.Name] = i
		}
		c.Jobs[i].schedule = validateJob(&p, key, job, gaps)
	}
	return p.list
}

// validateJobStore checks store.job_dsn and the sql jobs' roles, which need a Postgres store.
func (c *Config) validateJobStore(p *problems) {
	const needsPostgres = "needs a PostgreSQL store (store.dsn): the embedded SQLite store has no roles"
	if c.Store.JobDSN != "" {
		if c.Store.DSN == "" {
			p.add("store.job_dsn", "%s", needsPostgres)
		}
		if msg := dsnProblem(c.Store.JobDSN); msg != "" {
			p.add("store.job_dsn", "%s", msg)
		}
	}
	if c.Defaults.Role != "" && c.Store.DSN == "" {
		p.add("defaults.role", "%s", needsPostgres)
	}
	if msg := reservedRole(c.Defaults.Role); msg != "" {
		p.add("defaults.role", "%s", msg)
	}
	for i, job := range c.Jobs {
		if job.Role == "" || job.inherited["role"] {
			continue
		}
		if c.Store.DSN == "" {
			p.add(fmt.Sprintf("jobs[%d].role", i), "%s", needsPostgres)
		}
		if msg := reservedRole(job.Role); msg != "" {
			p.add(fmt.Sprintf("jobs[%d].role", i), "%s", msg)
		}
	}
}

// dsnProblem says what is wrong with a PostgreSQL connection string, or returns "". It parses
// the string as the store does when it connects (pgxpool.ParseConfig), pool_* parameters
// included, and never quotes it: pgx's errors can echo the password.
func dsnProblem(dsn string) string {
	const form = "not a valid PostgreSQL connection string (postgres://user@host/db or key=value pairs)"
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return form
	}
	if _, err := pgxpool.ParseConfig(dsn); err != nil {
		// The connection string parses: what the pool refused is one of its own parameters,
		// whose values are no secret.
		var params []string
		for k, v := range cc.RuntimeParams {
			if strings.HasPrefix(k, "pool_") {
				params = append(params, fmt.Sprintf("%s=%q", k, v))
			}
		}
		slices.Sort(params)
		return fmt.Sprintf("has a pool parameter the connection pool refuses (%s): pool_max_conns takes a whole number of at least 1, "+
			"pool_min_conns and pool_min_idle_conns a whole number, the others a duration such as 30m", strings.Join(params, ", "))
	}
	return ""
}

// reservedRoles are the names PostgreSQL gives SET ROLE a meaning of its own, quoted or not:
// SET LOCAL ROLE none is RESET ROLE, and the job would run as the scheduler's own login; the
// others name no role a job could be given.
var reservedRoles = []string{"none", "public", "current_user", "session_user", "current_role"}

// reservedRole says why role cannot be a sql job's role, or returns "". Postgres folds an
// unquoted name to lower case, so the names are compared regardless of case.
func reservedRole(role string) string {
	for _, r := range reservedRoles {
		if strings.EqualFold(role, r) {
			if r == "none" {
				return fmt.Sprintf("%q is reserved by PostgreSQL: SET ROLE none resets the role, so the job would run as the connection's own role; name a role created for the job", role)
			}
			return fmt.Sprintf("%q is reserved by PostgreSQL and names no role a job can run as; name a role created for the job", role)
		}
	}
	return ""
}

func (c *Config) validateEtcd(p *problems) {
	for i, ep := range c.Etcd.Endpoints {
		if msg := endpointProblem(ep); msg != "" {
			p.add(fmt.Sprintf("etcd.endpoints[%d]", i), "must be host:port or http(s)://host:port, got %q%s", ep, msg)
		}
	}
	if c.Etcd.DialTimeout <= 0 {
		p.add("etcd.dial_timeout", "must be positive, got %s", c.Etcd.DialTimeout)
	}
	if c.Etcd.Password != "" && c.Etcd.Username == "" {
		p.add("etcd.password", "is set but etcd.username is empty")
	}
	if c.Etcd.Username != "" && len(c.Etcd.Endpoints) == 0 && c.Election.Backend == BackendEtcd {
		// The embedded etcd has authentication off: its client would be refused a token over
		// and over, and log so every few seconds.
		p.add("etcd.username", "etcd.username and etcd.password need etcd.endpoints: the embedded etcd (no etcd.endpoints) "+
			"runs without authentication; remove them, or set etcd.endpoints to a cluster that has it")
	}
	tls := c.Etcd.TLS
	if (tls.CertFile == "") != (tls.KeyFile == "") {
		p.add("etcd.tls", "cert_file and key_file must be set together")
	}
	for key, file := range map[string]string{"ca_file": tls.CAFile, "cert_file": tls.CertFile, "key_file": tls.KeyFile} {
		if file == "" {
			continue
		}
		// Read as the configuration is (a regular file, bounded, never waited on), so that the
		// etcd client's own read at connect cannot hang on a pipe or exhaust memory on /dev/zero.
		if _, err := filelimit.Read(file, tlsLimit); err != nil {
			p.add("etcd.tls."+key, "cannot read %q: %v", file, err)
		}
	}
}

// endpointProblem says what is wrong with an etcd endpoint, as ": reason" or "" for none
// beyond the expected form.
func endpointProblem(ep string) string {
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return " (not a URL with a host)"
		}
		switch u.Scheme {
		case "unix", "unixs":
			return ""
		case "http", "https":
			if u.Port() == "" {
				return ""
			}
			if msg := checkHostPort(u.Host); msg != "" {
				return ": " + msg
			}
			return ""
		}
		return fmt.Sprintf(" (scheme %q: want http, https, unix or unixs)", u.Scheme)
	}
	host, _, err := net.SplitHostPort(ep)
	if err != nil || host == "" {
		return " (not host:port)"
	}
	if msg := checkHostPort(ep); msg != "" {
		return ": " + msg
	}
	return ""
}

// checkHostPort says what is wrong with a host:port address, or returns "". The port is a
// number from 0 to 65535 or a service name such as http.
func checkHostPort(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return strings.TrimPrefix(err.Error(), "address "+addr+": ")
	}
	if port == "" {
		return "the port is missing"
	}
	if isDigits(port) {
		if n, err := strconv.Atoi(port); err != nil || n > 65535 {
			return fmt.Sprintf("port %s is out of range (0 to 65535)", port)
		}
		return ""
	}
	// A service name is looked up in the local services database, as listening would.
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Sprintf("port %q is neither a number from 0 to 65535 nor a known service name", port)
	}
	return ""
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// problems collects Problems.
type problems struct{ list []Problem }

func (p *problems) add(key, format string, args ...any) {
	p.list = append(p.list, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// once adds the problem unless the list has it already: a value many jobs inherit.
func (p *problems) once(key, msg string) {
	if !slices.Contains(p.list, Problem{Key: key, Msg: msg}) {
		p.list = append(p.list, Problem{Key: key, Msg: msg})
	}
}

func (p *problems) enum(key, got string, allowed ...string) {
	for _, a := range allowed {
		if got == a {
			return
		}
	}
	p.add(key, "must be one of %s; got %q", strings.Join(allowed, ", "), got)
}

func (p *problems) nonNegative(key string, d time.Duration) {
	if d < 0 {
		p.add(key, "must not be negative, got %s", d)
	}
}
