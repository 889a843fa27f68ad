package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// PostgresRegistration keeps one replica's entry in the store for as long as its Run runs, as
// Registration does in etcd: the entry carries an expiry by the database's clock, pushed a TTL
// ahead every third of it, so that it drops out of Replicas within the TTL of the replica's end.
type PostgresRegistration struct {
	s         *Postgres
	ttl       time.Duration
	replica   func() scheduler.Replica
	lg        *zap.Logger
	republish chan struct{}
	first     published
}

// NewRegistration returns the registration of the replica that replica describes (it is called
// for every publication, so it may change), each publication valid for ttl.
func (s *Postgres) NewRegistration(ttl time.Duration, replica func() scheduler.Replica, lg *zap.Logger) (*PostgresRegistration, error) {
	switch {
	case ttl <= 0:
		return nil, fmt.Errorf("control: registration TTL %s: want a positive duration", ttl)
	case replica == nil || lg == nil:
		return nil, errors.New("control: NewRegistration needs the replica and a logger")
	}
	return &PostgresRegistration{s: s, ttl: ttl, replica: replica, lg: lg, republish: make(chan struct{}, 1), first: newPublished()}, nil
}

// Published is closed once the entry has been published for the first time.
func (r *PostgresRegistration) Published() <-chan struct{} { return r.first.ch }

// Republish publishes the entry again, as replica now describes it; it does not wait.
func (r *PostgresRegistration) Republish() {
	select {
	case r.republish <- struct{}{}:
	default: // one is pending, and it publishes the latest entry
	}
}

// Run registers the replica until ctx ends; the entry then expires within the TTL. A failure
// is logged (the first, then every thirtieth in a row) and retried at the next renewal; Run
// returns nil.
func (r *PostgresRegistration) Run(ctx context.Context) error {
	failures := 0
	for {
		if err := r.s.Register(ctx, r.replica(), r.ttl); err != nil && ctx.Err() == nil {
			if failures++; failures == 1 || failures%30 == 0 {
				r.lg.Warn("register replica", zap.Int("attempt", failures), zap.Error(err))
			}
		} else if ctx.Err() == nil {
			failures = 0
			r.first.done()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.republish:
		case <-time.After(r.ttl / 3):
		}
	}
}
