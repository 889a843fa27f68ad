package election

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// A key under the election prefix that is bound to no lease can never be a
// replica's: concurrency.Election writes every candidate key with its
// session's lease. Such a key was written by someone else (`etcdctl put`, a
// misconfigured tool sharing the prefix). It takes part in the election all
// the same: a candidate waits for every older key to be deleted, and a key
// without a lease is never deleted by an expiry, so every candidate whose key
// is newer waits for it forever and no replica leads.
//
// A campaigning round therefore removes the lease-less keys that stand before
// its own key, each in a transaction guarded on the key still having no lease
// and the same mod revision, so that a key rewritten meanwhile (by a real
// candidate, say) is left alone. Keys newer than its own block nobody yet and
// are left for status pages to report; the next candidate they block removes
// them.

// maxLoggedValue bounds how much of a lease-less key's value is logged: the
// value was written by someone else and may be large.
const maxLoggedValue = 256

// ReadLeaseless reads the keys under the election prefix that are bound to
// no lease, oldest first. No replica writes such a key; each one blocks every
// candidate whose key is newer (see RemoveCommand for how to delete it).
func ReadLeaseless(ctx context.Context, cli *clientv3.Client, prefix string) ([]Candidate, error) {
	cs, err := ReadCandidates(ctx, cli, prefix)
	if err != nil {
		return nil, err
	}
	return leaseless(cs), nil
}

// leaseless returns the candidates of cs bound to no lease, in cs's order.
func leaseless(cs []Candidate) []Candidate {
	var out []Candidate
	for _, c := range cs {
		if c.Lease == 0 {
			out = append(out, c)
		}
	}
	return out
}

// RemoveCommand returns the etcdctl command line that deletes key, quoted
// for a POSIX shell when it holds anything but plain path characters.
func RemoveCommand(key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/_.-:@+=,", r)) {
			plain = false
			break
		}
	}
	if plain {
		return "etcdctl del " + key
	}
	return "etcdctl del '" + strings.ReplaceAll(key, "'", `'\''`) + "'"
}

// blocks reports whether kv is a lease-less key standing before a candidate
// key created at own (zero while the candidate has no key yet, which will be
// newer than every key that exists now).
func blocks(kv *mvccpb.KeyValue, own int64) bool {
	return kv.Lease == 0 && (own == 0 || kv.CreateRevision < own)
}

// sweep removes the lease-less keys that stand before key, our candidate key
// (which Campaign may not have written yet), until ctx is cancelled: once at
// the start, then for every put under the prefix, as a watch reports it.
// Failures are logged and retried with a fresh read.
func (c *Campaigner) sweep(ctx context.Context, key string, lg *zap.Logger) {
	failures := 0
	for {
		err := c.sweepOnce(ctx, key, lg)
		if ctx.Err() != nil {
			return
		}
		failures++
		if failures == 1 {
			lg.Warn("remove lease-less keys", zap.Error(err))
		} else {
			lg.Debug("remove lease-less keys", zap.Int("attempt", failures), zap.Error(err))
		}
		t := time.NewTimer(backoff(failures, time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// sweepOnce reads the prefix, removes what blocks key, and follows the
// prefix's puts until the watch fails or ctx ends.
func (c *Campaigner) sweepOnce(ctx context.Context, key string, lg *zap.Logger) error {
	rctx := clientv3.WithRequireLeader(ctx)
	resp, err := c.cli.Get(rctx, c.cfg.Prefix+"/", clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("read %s/: %w", c.cfg.Prefix, err)
	}
	var own int64
	for _, kv := range resp.Kvs {
		if string(kv.Key) == key {
			own = kv.CreateRevision
		}
	}
	for _, kv := range resp.Kvs {
		if blocks(kv, own) {
			if err := c.removeLeaseless(ctx, kv, lg); err != nil {
				return err
			}
		}
	}
	wctx, cancel := context.WithCancel(rctx)
	defer cancel()
	for wr := range c.cli.Watch(wctx, c.cfg.Prefix+"/", clientv3.WithPrefix(),
		clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterDelete()) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("watch %s/: %w", c.cfg.Prefix, err)
		}
		for _, ev := range wr.Events {
			kv := ev.Kv
			if own == 0 && string(kv.Key) == key {
				own = kv.CreateRevision
			}
			if blocks(kv, own) {
				if err := c.removeLeaseless(ctx, kv, lg); err != nil {
					return err
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("watch " + c.cfg.Prefix + "/: closed")
}

// removeLeaseless deletes kv if it still has no lease and has not been
// written since it was read, and logs what it removed.
func (c *Campaigner) removeLeaseless(ctx context.Context, kv *mvccpb.KeyValue, lg *zap.Logger) error {
	key := string(kv.Key)
	// The delete is not cancelled with the sweep: a campaign won while it is in flight stops the
	// sweep, and a removal that commits must still be logged, so the answer is awaited (bounded).
	tctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.WithoutCancel(ctx)), requestTimeout(c.cfg.TTL))
	defer cancel()
	resp, err := c.cli.Txn(tctx).If(
		clientv3.Compare(clientv3.LeaseValue(key), "=", 0),
		clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision),
	).Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return fmt.Errorf("remove lease-less key %s: %w", key, err)
	}
	if !resp.Succeeded {
		lg.Debug("lease-less key changed or removed before us", zap.String("key", key), zap.Int64("create_revision", kv.CreateRevision))
		return nil
	}
	lg.Error("removed a lease-less key blocking the campaign",
		zap.String("key", key), zap.String("value", ShownValue(string(kv.Value))),
		zap.Int64("create_revision", kv.CreateRevision), zap.Int64("mod_revision", kv.ModRevision))
	return nil
}
