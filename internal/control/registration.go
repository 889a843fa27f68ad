package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"scheduler"
)

// registrationRetry is the pause before a lost or refused registration is tried again.
const registrationRetry = time.Second

// Registration keeps one replica's entry in etcd for as long as its Run runs: on a lease of its
// own, kept alive, so that the entry vanishes within the lease's TTL of the replica's end, and
// granted again (with the entry) whenever it is lost.
type Registration struct {
	s         *Store
	ttl       time.Duration
	replica   func() scheduler.Replica
	lg        *zap.Logger
	republish chan struct{}
	first     published
	rev       int64 // the revision of the last publication; Run's goroutine alone uses it
}

// NewRegistration returns the registration of the replica that replica describes (it is called
// for every publication, so it may change), on leases of ttl (whole seconds, at least one).
func (s *Store) NewRegistration(ttl time.Duration, replica func() scheduler.Replica, lg *zap.Logger) (*Registration, error) {
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
// asked, and when someone deletes it or writes over it (`etcdctl del`, or `etcdctl put` without
// the lease or with another value): without its entry a running replica is missing from status,
// and a leader would be judged a foreign holder of the election.
func (r *Registration) keep(ctx context.Context, ka <-chan *clientv3.LeaseKeepAliveResponse, lease clientv3.LeaseID) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := r.watchEntry(wctx)
	sibling := false // a replica of the same node name was seen publishing
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
		case c := <-changed:
			switch {
			case c.key != "" && !c.deleted && c.rev <= r.rev:
				continue // a publication of this registration's own, or one it has since replaced
			case c.key != "" && !c.deleted && r.sibling(c, lease):
				// Another replica registers under the same node name: each writing over the
				// other's entry would never end. The last one to publish keeps the key.
				if !sibling {
					sibling = true
					r.lg.Error("another replica publishes under this node name; give each replica a node name of its own",
						zap.String("key", c.key), zap.String("lease", fmt.Sprintf("%x", c.lease)))
				}
				continue
			case c.key != "" && c.deleted:
				r.lg.Error("replica entry deleted from outside; publishing it again", zap.String("key", c.key))
			case c.key != "":
				r.lg.Error("replica entry written over from outside; publishing it again", zap.String("key", c.key), zap.Int64("revision", c.rev))
			}
			if err := r.publish(ctx, lease); err != nil {
				return err
			}
		}
	}
}

// entryChange is a change of the replica's entry: deleted, or put at revision rev. An empty key
// says that changes may have been missed.
type entryChange struct {
	key     string
	rev     int64
	deleted bool
	lease   int64  // the lease of a put
	value   []byte // the value of a put
}

// sibling reports whether c puts an entry of another replica of the same node name: a valid
// entry on a lease that is not this registration's. One on no lease, on this registration's,
// or that does not parse is written over.
func (r *Registration) sibling(c entryChange, lease clientv3.LeaseID) bool {
	if c.lease == int64(clientv3.NoLease) || c.lease == int64(lease) {
		return false
	}
	_, err := decodeReplica(r.replica().Node, c.value)
	return err == nil
}

// watchEntry reports the changes of the replica's entry from the last publication on, until ctx
// ends. A watch that ends (etcd lost its leader, or compacted the history past it) is started
// again, and reported as a change with no key: one may have been missed meanwhile.
func (r *Registration) watchEntry(ctx context.Context) <-chan entryChange {
	out := make(chan entryChange, 1)
	key := r.s.k.replica(r.replica().Node)
	rev := r.rev
	send := func(c entryChange) bool {
		select {
		case out <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	go func() {
		for ctx.Err() == nil {
			var opts []clientv3.OpOption
			if rev > 0 {
				opts = append(opts, clientv3.WithRev(rev+1))
			}
			for wr := range r.s.cli.Watch(clientv3.WithRequireLeader(ctx), key, opts...) {
				if wr.Err() != nil {
					break
				}
				for _, ev := range wr.Events {
					c := entryChange{key: key, rev: ev.Kv.ModRevision, deleted: ev.Type == mvccpb.DELETE, lease: ev.Kv.Lease, value: ev.Kv.Value}
					if !send(c) {
						return
					}
				}
			}
			rev = 0
			select {
			case <-ctx.Done():
				return
			case <-time.After(registrationRetry):
			}
			if !send(entryChange{}) {
				return
			}
		}
	}()
	return out
}

func (r *Registration) publish(ctx context.Context, lease clientv3.LeaseID) error {
	rev, err := r.s.register(ctx, lease, r.replica())
	if err != nil {
		return err
	}
	r.rev = rev
	r.first.done()
	return nil
}
