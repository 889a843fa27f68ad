package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zapcore"
)

var (
	jobNameRE    = regexp.MustCompile(`^[a-z0-9_-]+$`)
	identifierRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// Validate reports every problem in the configuration, each with its key path. It connects
// nowhere and reads only the TLS files it names.
func (c *Config) Validate() []Problem {
	var p problems
	if strings.ContainsAny(c.Node, " \t\n/") {
		p.add("node", "must not contain spaces or slashes, got %q", c.Node)
	}
	if c.DataDir == "" {
		p.add("data_dir", "must not be empty")
	}
	c.validateEtcd(&p)
	if !strings.HasPrefix(c.Election.Prefix, "/") || strings.HasSuffix(c.Election.Prefix, "/") {
		p.add("election.prefix", "must start with / and not end with /, got %q", c.Election.Prefix)
	}
	switch ttl := c.Election.TTL; {
	case ttl < time.Second:
		p.add("election.ttl", "must be at least 1s, got %s", ttl)
	case ttl%time.Second != 0:
		p.add("election.ttl", "must be a whole number of seconds (etcd leases count seconds), got %s", ttl)
	}
	if c.Store.DSN != "" {
		if _, err := pgx.ParseConfig(c.Store.DSN); err != nil {
			// pgx's message can echo the DSN; say what is wrong without the password.
			p.add("store.dsn", "not a valid PostgreSQL connection string (postgres://user@host/db or key=value pairs)")
		}
	}
	if !identifierRE.MatchString(c.Store.Schema) || len(c.Store.Schema) > 63 {
		p.add("store.schema", "must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 bytes), got %q", c.Store.Schema)
	}
	if c.HTTP.Addr != "" {
		if _, port, err := net.SplitHostPort(c.HTTP.Addr); err != nil || port == "" {
			p.add("http.addr", "must be host:port (or empty to disable), got %q", c.HTTP.Addr)
		}
	}
	if _, err := zapcore.ParseLevel(c.Log.Level); err != nil || c.Log.Level == "" {
		p.add("log.level", "must be one of debug, info, warn, error; got %q", c.Log.Level)
	}
	p.enum("log.format", c.Log.Format, "json", "console")
	p.nonNegative("shutdown_grace", c.ShutdownGrace)
	validateHistory(&p, c.History)
	p.enum("metrics.per_job", c.Metrics.PerJob, "auto", "on", "off")
	validateDefaults(&p, c.Defaults)
	checkJobHistory(&p, "defaults.history", c.Defaults.History, c.historyFromTop)

	seen := map[string]int{}
	for i, job := range c.Jobs {
		key := fmt.Sprintf("jobs[%d]", i)
		if first, dup := seen[job.Name]; dup && job.Name != "" {
			p.add(key+".name", "duplicate job name %q (also jobs[%d])", job.Name, first)
		} else {
			seen[job.Name] = i
		}
		validateJob(&p, key, job)
	}
	return p.list
}

func (c *Config) validateEtcd(p *problems) {
	for i, ep := range c.Etcd.Endpoints {
		if !validEndpoint(ep) {
			p.add(fmt.Sprintf("etcd.endpoints[%d]", i), "must be host:port or http(s)://host:port, got %q", ep)
		}
	}
	if c.Etcd.DialTimeout <= 0 {
		p.add("etcd.dial_timeout", "must be positive, got %s", c.Etcd.DialTimeout)
	}
	if c.Etcd.Password != "" && c.Etcd.Username == "" {
		p.add("etcd.password", "is set but etcd.username is empty")
	}
	tls := c.Etcd.TLS
	if (tls.CertFile == "") != (tls.KeyFile == "") {
		p.add("etcd.tls", "cert_file and key_file must be set together")
	}
	for key, file := range map[string]string{"ca_file": tls.CAFile, "cert_file": tls.CertFile, "key_file": tls.KeyFile} {
		if file == "" {
			continue
		}
		if _, err := os.Stat(file); err != nil {
			p.add("etcd.tls."+key, "cannot read %q: %v", file, err)
		}
	}
}

func validEndpoint(ep string) bool {
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "unix" || u.Scheme == "unixs") && u.Host != ""
	}
	host, port, err := net.SplitHostPort(ep)
	return err == nil && host != "" && port != ""
}

// problems collects Problems.
type problems struct{ list []Problem }

func (p *problems) add(key, format string, args ...any) {
	p.list = append(p.list, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
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
