package zkelection

import (
	"errors"
	"fmt"
	"path"
	"time"

	"scheduler/internal/lease"
)

// Config configures a Campaigner.
type Config struct {
	// Servers are the ZooKeeper servers, "host:port" (zookeeper.servers).
	Servers []string
	// SessionTimeout is the session timeout asked of the server
	// (zookeeper.session_timeout), at least 1 s. The server grants a value
	// between 2 and 20 of its ticks; the leader's deadline counts with the
	// value asked, so it must not exceed the server's maximum (20 ticks, or
	// maxSessionTimeout), or the leader may step down too late.
	SessionTimeout time.Duration
	// Path is the election's parent node (zookeeper.path), e.g.
	// "/scheduler/election". It and its ancestors are created when missing.
	// Nothing but candidates may live under it.
	Path string
	// Node is the replica name, the data of its candidate node.
	Node string
	// Margin is how long before the session could expire on the server the
	// leader steps down when no request was answered. Zero means
	// max(SessionTimeout/5, 500ms). It must be below 2/3 of
	// SessionTimeout.
	Margin time.Duration
	// Events receives leadership changes and renewals, e.g. for metrics.
	// Every hook is optional.
	Events Events
	// Now reads the clock for deadlines and Term.Since. Nil means time.Now;
	// a custom clock must keep Go's monotonic reading.
	Now func() time.Time
}

// Events are optional hooks, called synchronously from Run's goroutines
// (see lease.Events). OnRenewed is called after every successful
// answered session check of a term.
type Events = lease.Events

// validate checks c and fills in defaults.
func (c *Config) validate() error {
	var errs []error
	if len(c.Servers) == 0 {
		errs = append(errs, errors.New("servers: none"))
	}
	if c.Path == "" || c.Path[0] != '/' || c.Path == "/" || path.Clean(c.Path) != c.Path {
		errs = append(errs, fmt.Errorf("path %q: want an absolute, clean node path other than /", c.Path))
	}
	if c.Node == "" {
		errs = append(errs, errors.New("node: empty"))
	}
	errs = append(errs, lease.Timing("session timeout", c.SessionTimeout, &c.Margin, nil, &c.Now)...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("zkelection config: %w", err)
	}
	return nil
}
