package config

import (
	"fmt"
	"math"
	"path"
	"strings"
	"time"
	"unicode/utf8"
)

// The coordinators election.backend names.
const (
	BackendEtcd      = "etcd"
	BackendPostgres  = "postgres"
	BackendZooKeeper = "zookeeper"
	BackendRedis     = "redis"
)

// The longest election.ttl and zookeeper.session_timeout the backends can grant: etcd refuses a
// longer lease (its server's MaxLeaseTTL, in seconds), and ZooKeeper's protocol asks for a
// session timeout in milliseconds as an int32. The postgres and redis backends count the TTL in
// milliseconds as an int64, which holds every duration.
const (
	MaxEtcdTTL          = 9_000_000_000 * time.Second
	MaxZooKeeperSession = math.MaxInt32 * time.Millisecond
)

// ZooKeeperConfig is the ZooKeeper client configuration of election.backend zookeeper.
type ZooKeeperConfig struct {
	// Servers are host:port of each server of the ensemble.
	Servers []string `mapstructure:"servers"`
	// SessionTimeout is the session timeout asked of the servers, at least 1s, at most
	// MaxZooKeeperSession and within the servers' bounds (2 to 20 ticks): a frozen or cut-off leader steps down before it and a
	// follower takes over after it. Default: 5s.
	SessionTimeout time.Duration `mapstructure:"session_timeout"`
	// Path is the election's parent node; only candidates may live under it.
	// Default: /scheduler/election.
	Path string `mapstructure:"path"`
}

// RedisConfig is the Redis client configuration of election.backend redis.
type RedisConfig struct {
	// Addr is host:port of the Redis server.
	Addr string `mapstructure:"addr"`
	// Password authenticates to Redis (AUTH) when set; a secret, also read from
	// redis.password_file.
	Password string `mapstructure:"password"`
	// DB is the database number the lock lives in. Default: 0.
	DB int `mapstructure:"db"`
	// Key is the lock's key; the token counter lives at KEY:token and changes are published
	// on KEY:events. Default: scheduler:leader.
	Key string `mapstructure:"key"`
}

// validateBackend checks election.backend, its own keys, and the combinations that cannot be
// safe: a backend other than etcd elects among replicas on several hosts, so their fence and
// ledger must be one shared PostgreSQL store.
func (c *Config) validateBackend(p *problems) {
	switch c.Election.Backend {
	case BackendEtcd:
		return
	case BackendPostgres:
		if c.Store.DSN == "" {
			p.add("election.backend", "postgres needs store.dsn: the lease lives in the PostgreSQL store beside the fence, "+
				"and store.dsn is empty (the embedded SQLite store)")
		}
	case BackendZooKeeper, BackendRedis:
		if c.Store.DSN == "" {
			p.add("store.dsn", "is empty while election.backend is %s: each host would keep its own SQLite ledger and fence, "+
				"so every replica could run every slot; set store.dsn to the shared PostgreSQL", c.Election.Backend)
		}
	default:
		p.enum("election.backend", c.Election.Backend, BackendEtcd, BackendPostgres, BackendZooKeeper, BackendRedis)
		return
	}
	if c.SingleNode {
		p.add("single_node", "applies to the etcd backend only; election.backend is %s", c.Election.Backend)
	}
	if len(c.Etcd.Endpoints) > 0 {
		p.add("etcd.endpoints", "is set while election.backend is %s, which uses no etcd", c.Election.Backend)
	}
	switch c.Election.Backend {
	case BackendZooKeeper:
		c.validateZooKeeper(p)
	case BackendRedis:
		c.validateRedis(p)
	}
}

func (c *Config) validateZooKeeper(p *problems) {
	z := c.ZooKeeper
	if len(z.Servers) == 0 {
		p.add("zookeeper.servers", "is empty while election.backend is zookeeper")
	}
	for i, s := range z.Servers {
		if msg := checkHostPort(s); msg != "" {
			p.add(fmt.Sprintf("zookeeper.servers[%d]", i), "must be host:port, got %q: %s", s, msg)
		}
	}
	switch {
	case z.SessionTimeout < time.Second:
		p.add("zookeeper.session_timeout", "must be at least 1s, got %s", z.SessionTimeout)
	case z.SessionTimeout > MaxZooKeeperSession:
		p.add("zookeeper.session_timeout", "must be at most %s, the longest a session can ask for, got %s", MaxZooKeeperSession, z.SessionTimeout)
	}
	if z.Path == "" || z.Path[0] != '/' || z.Path == "/" || path.Clean(z.Path) != z.Path {
		p.add("zookeeper.path", "must be an absolute, clean node path other than /, got %q", z.Path)
	} else if i := strings.IndexFunc(z.Path, zkRefuses); i >= 0 {
		r, _ := utf8.DecodeRuneInString(z.Path[i:])
		p.add("zookeeper.path", "holds %U, which ZooKeeper refuses in a node path, got %q", r, z.Path)
	}
}

// zkRefuses reports whether ZooKeeper's client refuses r in a node path: every campaign would
// fail on it.
func zkRefuses(r rune) bool {
	return r <= 0x1f || r >= 0x7f && r <= 0x9f || r >= 0xf000 && r <= 0xf8ff || r >= 0xfff0 && r < 0xffff
}

func (c *Config) validateRedis(p *problems) {
	r := c.Redis
	if r.Addr == "" {
		p.add("redis.addr", "is empty while election.backend is redis")
	} else if msg := checkHostPort(r.Addr); msg != "" {
		p.add("redis.addr", "must be host:port, got %q: %s", r.Addr, msg)
	}
	if r.DB < 0 {
		p.add("redis.db", "must not be negative, got %d", r.DB)
	}
	if r.Key == "" {
		p.add("redis.key", "must not be empty")
	}
}
