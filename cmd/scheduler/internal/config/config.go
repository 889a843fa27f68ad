package config

import (
	"math"
	"time"

	"scheduler/internal/notify"
	"scheduler/internal/schedule"
)

// Config is the whole configuration of a replica, as read from the YAML file and the SCHEDULER_*
// environment. Load fills it and applies defaults; Validate reports every problem in it.
type Config struct {
	// Node names this replica in the election and in the run ledger. Default: the hostname.
	Node string `mapstructure:"node"`
	// DataDir holds the embedded etcd and the embedded SQLite store. A relative path is read
	// from the configuration file's directory. Default: ./data.
	DataDir string `mapstructure:"data_dir"`
	// SingleNode declares a deployment of one replica. It allows etcd.endpoints without
	// store.dsn, which keeps the ledger and the fence in this host's SQLite: with a second
	// replica each host would keep its own, and every replica could run every slot.
	// Default: false.
	SingleNode bool `mapstructure:"single_node"`
	// Etcd says how to reach the etcd cluster that elects the leader.
	Etcd EtcdConfig `mapstructure:"etcd"`
	// Election tunes the leader election.
	Election ElectionConfig `mapstructure:"election"`
	// ZooKeeper says how to reach the ZooKeeper ensemble of election.backend zookeeper.
	ZooKeeper ZooKeeperConfig `mapstructure:"zookeeper"`
	// Redis says how to reach the Redis server of election.backend redis.
	Redis RedisConfig `mapstructure:"redis"`
	// Store says where the fence and the run ledger live.
	Store StoreConfig `mapstructure:"store"`
	// HTTP configures the health, metrics and status server.
	HTTP HTTPConfig `mapstructure:"http"`
	// Metrics bounds the Prometheus series the daemon exports.
	Metrics MetricsConfig `mapstructure:"metrics"`
	// Log configures the logger.
	Log LogConfig `mapstructure:"log"`
	// ShutdownGrace is how long running jobs, then the outbox's deliveries in flight, may finish
	// after SIGTERM before they are cancelled. Default: 30s.
	ShutdownGrace time.Duration `mapstructure:"shutdown_grace"`
	// History is the run ledger's retention for every job (under defaults and per job a job's
	// own limits win) and how the leader prunes it.
	History HistoryConfig `mapstructure:"history"`
	// Outbox is how the leader delivers the e-mails and webhooks jobs queue.
	Outbox OutboxConfig `mapstructure:"outbox"`
	// Defaults holds job keys set once for every job; a job's own keys win.
	Defaults JobSpec `mapstructure:"defaults"`
	// Jobs is the cron table.
	Jobs []Job `mapstructure:"jobs"`

	// fromEnv maps the key paths set by SCHEDULER_* variables to those variables, so that a
	// bad value is blamed on its variable rather than on the file. Nil when none was set.
	fromEnv map[string]string
	// historyFromTop names the keys of defaults.history taken from the top-level history block,
	// so that a bad value there is reported once, under history.KEY.
	historyFromTop map[string]bool
	// caseTwins are the key paths of the keys removed, and reported, for differing only in case
	// from another key of their mapping; nil when there were none.
	caseTwins []string
}

// EtcdConfig is the etcd client configuration.
type EtcdConfig struct {
	// Endpoints are host:port or URLs of the etcd members. Empty: an embedded single-node etcd
	// in data_dir, for development only.
	Endpoints []string `mapstructure:"endpoints"`
	// DialTimeout bounds the first connection attempt. Default: 5s.
	DialTimeout time.Duration `mapstructure:"dial_timeout"`
	// Username and Password enable etcd authentication when Username is set.
	Username string `mapstructure:"username"`
	Password string `mapstructure:"password"`
	// TLS enables TLS to etcd when any of its files is set.
	TLS TLSConfig `mapstructure:"tls"`
}

// TLSConfig names PEM files for a TLS client.
type TLSConfig struct {
	// CAFile verifies the server certificate. Empty: the system roots.
	CAFile string `mapstructure:"ca_file"`
	// CertFile and KeyFile are the client certificate and key, for mutual TLS; both or neither.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
}

// ElectionConfig tunes the leader election.
type ElectionConfig struct {
	// Backend is the coordinator that elects the leader: etcd, postgres, zookeeper or redis.
	// Default: etcd.
	Backend string `mapstructure:"backend"`
	// Prefix is the etcd key prefix of the election. Default: /scheduler/election.
	Prefix string `mapstructure:"prefix"`
	// TTL is the lease TTL, in whole seconds, at least 1s (with etcd at most MaxEtcdTTL): a
	// frozen or cut-off leader loses leadership after it. The postgres and redis backends use it
	// too (zookeeper has zookeeper.session_timeout). Default: 5s.
	TTL time.Duration `mapstructure:"ttl"`
}

// StoreConfig says where the fence and the run ledger live.
type StoreConfig struct {
	// DSN is a PostgreSQL connection string (URL or key=value). Empty: embedded SQLite at
	// data_dir/scheduler.db.
	DSN string `mapstructure:"dsn"`
	// Schema is the Postgres schema of the scheduler's own tables. Default: scheduler.
	Schema string `mapstructure:"schema"`
	// JobDSN is an optional second PostgreSQL connection string, on which sql jobs run: a login
	// role with no rights on the scheduler's schema beyond USAGE and EXECUTE on fence_verify, so
	// that a job's SQL cannot write the scheduler's tables. Empty: sql jobs run on DSN, as the
	// scheduler's own role. Needs DSN.
	JobDSN string `mapstructure:"job_dsn"`
}

// HTTPConfig configures the health, metrics and status server.
type HTTPConfig struct {
	// Addr is the listen address. Default: 127.0.0.1:8080. Empty disables the server.
	Addr string `mapstructure:"addr"`
	// AdminTokenFile names a file, readable by its owner only, holding the web console's admin
	// token; set, the console offers pause, resume and trigger to whoever sends it. Default: ""
	// (read-only). Read at start, not on a reload.
	AdminTokenFile string `mapstructure:"admin_token_file"`
	// AdminToken is the token Validate read from AdminTokenFile; not a key of its own.
	AdminToken string `mapstructure:"-"`
}

// LogConfig configures the logger.
type LogConfig struct {
	// Level is debug, info, warn or error. Default: info.
	Level string `mapstructure:"level"`
	// Format is json, console (lines for people), or auto: console when the log goes to a
	// terminal, json otherwise. Default: auto.
	Format string `mapstructure:"format"`
}

// Job is one entry of the cron table.
type Job struct {
	// Name identifies the job: unique, [a-z0-9_-]+, at most control.MaxJobName bytes.
	Name    string `mapstructure:"name"`
	JobSpec `mapstructure:",squash"`

	// inherited names the keys this job took from `defaults`, so that a bad default is
	// reported once under defaults.KEY rather than once per job.
	inherited map[string]bool
	// schedule is Schedule parsed in Timezone by Validate, which the table and status use
	// rather than parse it again; nil before Validate, or when either was refused.
	schedule *schedule.Schedule
}

// MaxRetries bounds a job's retries: the ledger counts a run's attempts in an integer column,
// and a run retried more often than this has stopped being a retry.
const MaxRetries = 1000

// LongestRun is the longest a run of the job may take, its timeout times its attempts; the
// longest duration there is when that product is longer.
func (j *Job) LongestRun() time.Duration {
	if n := time.Duration(j.Retries) + 1; j.Retries >= 0 && j.Timeout > 0 && j.Timeout > math.MaxInt64/n {
		return math.MaxInt64
	}
	return j.Timeout * time.Duration(j.Retries+1)
}

// ParsedSchedule is the job's schedule as Validate parsed it in its zone, which the table and
// status use rather than parse it again; nil before Validate, or when either was refused.
func (j *Job) ParsedSchedule() *schedule.Schedule { return j.schedule }

// JobSpec holds every job key but the name; `defaults` uses it to set keys for all jobs.
type JobSpec struct {
	// Schedule is a cron spec: 5 fields, 6 with leading seconds, a descriptor, or @every D.
	Schedule string `mapstructure:"schedule"`
	// Timezone is the IANA zone the schedule is read in. Default: UTC.
	Timezone string `mapstructure:"timezone"`
	// Type is builtin, exec, sql or http.
	Type string `mapstructure:"type"`
	// Builtin names the Go job of a builtin job: invoices or stock.
	Builtin string `mapstructure:"builtin"`
	// Params are the builtin job's parameters.
	Params map[string]any `mapstructure:"params"`
	// Command is the argv of an exec job (no shell).
	Command []string `mapstructure:"command"`
	// Env adds environment variables to an exec job.
	Env map[string]string `mapstructure:"env"`
	// Dir is the working directory of an exec job.
	Dir string `mapstructure:"dir"`
	// User and Group run an exec job as another user or group, by name or numeric id. With
	// User, the job gets the user's primary group (unless Group is set) and its supplementary
	// groups; with Group alone, the daemon's supplementary groups are dropped. Default: the
	// daemon's user and group. The daemon must run as root or hold CAP_SETUID, CAP_SETGID and
	// CAP_KILL.
	User  string `mapstructure:"user"`
	Group string `mapstructure:"group"`
	// SQL holds the statements of a sql job, run in one fenced transaction.
	SQL string `mapstructure:"sql"`
	// Role is the Postgres role a sql job's statements run under (SET LOCAL ROLE after the fence
	// check): a lower-case identifier. Empty: the connection's own role. Needs a Postgres store.
	Role string `mapstructure:"role"`
	// URL, Method and Headers describe the request of an http job. Method defaults to POST.
	URL     string            `mapstructure:"url"`
	Method  string            `mapstructure:"method"`
	Headers map[string]string `mapstructure:"headers"`
	// FollowRedirects lets an http job follow a redirect to the same scheme, host and port that
	// keeps the method (307, 308). Default: false, a redirect fails the run.
	FollowRedirects bool `mapstructure:"follow_redirects"`
	// Timeout bounds one attempt. Default: 1h.
	Timeout time.Duration `mapstructure:"timeout"`
	// Retries is how many times a failed attempt is retried, 0 to MaxRetries. Default: 0.
	Retries int `mapstructure:"retries"`
	// RetryBackoff is the wait before the first retry; it doubles per retry, capped. Default: 10s.
	RetryBackoff time.Duration `mapstructure:"retry_backoff"`
	// Overlap is what happens when a slot is due while the previous run still runs:
	// skip, queue, replace or allow. Default: skip.
	Overlap string `mapstructure:"overlap"`
	// Misfire is what a new leader does with slots missed within Catchup: skip, once or all.
	// Default: once.
	Misfire string `mapstructure:"misfire"`
	// Catchup is how far back a new leader looks for missed slots. Default: 1h.
	Catchup time.Duration `mapstructure:"catchup"`
	// Jitter delays each slot by a deterministic offset in [0, Jitter). Default: 0.
	Jitter time.Duration `mapstructure:"jitter"`
	// Enabled false keeps the job in the table without firing it. Default: true.
	Enabled bool `mapstructure:"enabled"`
	// History is the job's retention in the run ledger. Default: the top-level history block.
	History JobHistory `mapstructure:"history"`
	// Notify is the job's failure notifications, through the outbox. Default: none.
	Notify notify.Config `mapstructure:"notify"`
}

// defaultSettings are the values of keys the user did not set. Every key that can be set from
// the environment must appear here: viper only reads SCHEDULER_* variables for keys it knows.
func defaultSettings() map[string]any {
	return map[string]any{
		"node":                   "",
		"data_dir":               "./data",
		"single_node":            false,
		"etcd.endpoints":         []string{},
		"etcd.dial_timeout":      "5s",
		"etcd.username":          "",
		"etcd.password":          "",
		"etcd.tls.ca_file":       "",
		"etcd.tls.cert_file":     "",
		"etcd.tls.key_file":      "",
		"election.prefix":        "/scheduler/election",
		"election.ttl":           "5s",
		"store.dsn":              "",
		"store.schema":           "scheduler",
		"store.job_dsn":          "",
		"http.addr":              "127.0.0.1:8080",
		"http.admin_token_file":  "",
		"metrics.per_job":        "auto",
		"log.level":              "info",
		"log.format":             "auto",
		"shutdown_grace":         "30s",
		"history.max_age":        "2160h",
		"history.max_runs":       10000,
		"history.prune_interval": "10m",
		"history.prune_batch":    500,
		"history.prune_pause":    "200ms",
		"outbox.smtp.addr":       "",
		"outbox.smtp.from":       "",
		"outbox.smtp.username":   "",
		"outbox.smtp.password":   "",
		"outbox.smtp.tls":        "starttls",
		"outbox.log":             false,
		"outbox.max_attempts":    10,
		"outbox.retry_backoff":   "30s",
		"outbox.batch":           100,
		"outbox.webhook.hosts":   []string{},
		"defaults.timezone":      "UTC",
		"defaults.method":        "POST",
		"defaults.role":          "",
		"defaults.user":          "",
		"defaults.group":         "",
		"defaults.timeout":       "1h",
		"defaults.retries":       0,
		"defaults.retry_backoff": "10s",
		"defaults.overlap":       "skip",
		"defaults.misfire":       "once",
		"defaults.catchup":       "1h",
		"defaults.jitter":        "0s",
		"defaults.enabled":       true,

		// the coordinator backends
		"election.backend":          "etcd",
		"zookeeper.servers":         []string{},
		"zookeeper.session_timeout": "5s",
		"zookeeper.path":            "/scheduler/election",
		"redis.addr":                "",
		"redis.password":            "",
		"redis.db":                  0,
		"redis.key":                 "scheduler:leader",

		// http jobs
		"defaults.follow_redirects": false,
	}
}
