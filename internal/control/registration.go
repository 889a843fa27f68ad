package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// registrationRetry is the pause before a lost or refused registration is tried again.
const registrationRetry = time.Second

// Registration keeps one replica's entry in etcd for as long as its Run runs: on a lease of its
// own, kept alive, so that the entry vanishes within the lease's TTL of the replica's end, and
// granted again (with the entry) whenever it is lost.
type Registration struct {
	s         *Store
	ttl       time.Duration
	replica   func() Replica
	lg        *zap.Logger
	republish chan struct{}
	first     published
}

// NewRegistration returns the registration of the replica that replica describes (it is called
// for every publication, so it may change), on leases of ttl (whole seconds, at least one).
func (s *Store) NewRegistration(ttl time.Duration, replica func() Replica, lg *zap.Logger) (*Registration, error) {
	switch {
	case ttl < time.Second:
		return nil, fmt.Errorf("control: registration lease TTL %s: want at least 1s", ttl)
	case replica == nil || lg == nil:
		return nil, errors.New("control: NewRegistration needs the replica and a logger")
	}
	return &Registration{s: s, ttl: ttl, replica: replica, lg: lg, republish: make(chan struct{}, 1), first: newPublished()}, nil
}

// Published is closed once the entry has been published for the first time.
func (r *Registration) Published() <-chan struct{} { return r.first.ch }

// Republish publishes the entry again, as replica now describes it; it does not wait.
func (r *Registration) Republish() {
	select {
	case r.republish <- struct{}{}:
	default: // one is pending, and it publishes the latest entry
	}
}

// Run registers the replica until ctx ends, then revokes the lease, which removes the entry. A
// failure is logged and retried; Run returns nil.
func (r *Registration) Run(ctx context.Context) error {
	cli := r.s.cli
	for ctx.Err() == nil {
		lease, err := cli.Grant(ctx, int64(r.ttl/time.Second))
		if err == nil {
			err = r.publish(ctx, lease.ID)
		}
		if err == nil {
			var ka <-chan *clientv3.LeaseKeepAliveResponse
			if ka, err = cli.KeepAlive(ctx, lease.ID); err == nil {
				err = r.keep(ctx, ka, lease.ID)
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_, _ = cli.Revoke(rctx, lease.ID)
			cancel()
		}
		if err != nil && ctx.Err() == nil {
			r.lg.Warn("register replica", zap.Error(err))
		}
		select {
		case <-ctx.Done():
		case <-time.After(registrationRetry):
		}
	}
	return nil
}

// keep drains the keep-alive channel until the lease is lost, and republishes the entry when
// asked.
func (r *Registration) keep(ctx context.Context, ka <-chan *clientv3.LeaseKeepAliveResponse, lease clientv3.LeaseID) error {
	for {
		select {
		case _, ok := <-ka:
			if !ok {
				return nil
			}
		case <-r.republish:
			if err := r.publish(ctx, lease); err != nil {
				return err
			}
		}
	}
}

func (r *Registration) publish(ctx context.Context, lease clientv3.LeaseID) error {
	if err := r.s.Register(ctx, lease, r.replica()); err != nil {
		return err
	}
	r.first.done()
	return nil
}
