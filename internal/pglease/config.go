package pglease

import (
	"errors"
	"fmt"
	"time"

	"scheduler/internal/lease"
)

// Config configures a Campaigner.
type Config struct {
	// Schema is the store's schema (store.schema), which holds the
	// leader_lease and job_fence tables.
	Schema string
	// Name is the election: the leader_lease row the candidates contend
	// for. Replicas of one scheduler use the same name.
	Name string
	// Node is the replica name, shown as the leader by observers.
	Node string
	// TTL is how long a grant or a renewal keeps the lease, counted by the
	// database's clock from when it executes the statement. At least 1 s;
	// it is stored in milliseconds.
	TTL time.Duration
	// Margin is how long before the lease could expire in the database the
	// leader steps down when no renewal succeeded. Zero means
	// max(TTL/5, 500ms). It must be below 2/3 of TTL.
	Margin time.Duration
	// Poll bounds how long a follower waits between two attempts when no
	// notification arrives. Zero means TTL.
	Poll time.Duration
	// Events receives leadership changes and renewals, e.g. for metrics.
	// Every hook is optional.
	Events Events
	// Now reads the clock for renewal deadlines and Term.Since. Nil means
	// time.Now; a custom clock must keep Go's monotonic reading.
	Now func() time.Time
}

// Events are optional hooks, called synchronously from Run's goroutines
// (see lease.Events). OnRenewed is called after every successful lease
// grant or renewal of a term.
type Events = lease.Events

// validate checks c and fills in defaults.
func (c *Config) validate() error {
	var errs []error
	if c.Schema == "" {
		errs = append(errs, errors.New("schema: empty"))
	}
	if c.Name == "" {
		errs = append(errs, errors.New("name: empty"))
	}
	if c.Node == "" {
		errs = append(errs, errors.New("node: empty"))
	}
	errs = append(errs, lease.Timing("ttl", c.TTL, &c.Margin, &c.Poll, &c.Now)...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pglease config: %w", err)
	}
	return nil
}
