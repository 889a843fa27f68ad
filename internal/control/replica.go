package control

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler"
)

// Register publishes r under its node name, bound to lease: the entry
// vanishes when the lease ends, so the caller keeps the lease alive for as
// long as the replica runs (a concurrency.Session does) and calls Register
// again whenever r changes (a reloaded table). A replica with the same node
// name registered elsewhere is overwritten.
func (s *Store) Register(ctx context.Context, lease clientv3.LeaseID, r scheduler.Replica) error {
	_, err := s.register(ctx, lease, r)
	return err
}

// register is Register that also returns the revision of the put.
func (s *Store) register(ctx context.Context, lease clientv3.LeaseID, r scheduler.Replica) (int64, error) {
	if err := checkNode(r.Node); err != nil {
		return 0, fmt.Errorf("register replica: %w", err)
	}
	if lease == clientv3.NoLease {
		return 0, fmt.Errorf("register replica %q: no lease: the entry would outlive the replica", r.Node)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return 0, fmt.Errorf("register replica %q: encode: %w", r.Node, err)
	}
	resp, err := s.cli.Put(rctx(ctx), s.k.replica(r.Node), string(b), clientv3.WithLease(lease))
	if err != nil {
		return 0, fmt.Errorf("register replica %q on lease %x: %w", r.Node, int64(lease), err)
	}
	return resp.Header.Revision, nil
}

// Replicas returns the registered replicas by node name, leaving out the
// entries that are no replica's (see Registry).
func (s *Store) Replicas(ctx context.Context) ([]scheduler.Replica, error) {
	rs, _, err := s.Registry(ctx)
	return rs, err
}

// Registry returns the registered replicas by node name, and a problem for
// each entry that is no replica's: one bound to no lease (written by hand, it
// never expires) or whose value does not parse as a replica's entry for its
// key. Each problem names the key, bounded, and the command that removes it.
func (s *Store) Registry(ctx context.Context) (rs []scheduler.Replica, stray []string, err error) {
	kvs, err := s.list(ctx, "replicas", s.k.replicaPrefix())
	if err != nil {
		return nil, nil, err
	}
	rs = make([]scheduler.Replica, 0, len(kvs))
	for _, kv := range kvs {
		key := string(kv.Key)
		r, err := decodeReplica(strings.TrimPrefix(key, s.k.replicaPrefix()), kv.Value)
		if err == nil && kv.Lease == 0 {
			err = errors.New("bound to no lease, so it never expires")
		}
		if err != nil {
			stray = append(stray, fmt.Sprintf("replica registry key %q is no replica's entry (%v): no replica writes such a key; remove it with: %s",
				shownKey(key), err, removeCommand(key)))
			continue
		}
		rs = append(rs, r)
	}
	return rs, stray, nil // etcd returns keys sorted, hence by node name
}

// decodeReplica parses the entry of node as Register writes it.
func decodeReplica(node string, value []byte) (scheduler.Replica, error) {
	if err := checkNode(node); err != nil {
		return scheduler.Replica{}, err
	}
	var r scheduler.Replica
	if err := json.Unmarshal(value, &r); err != nil {
		return scheduler.Replica{}, fmt.Errorf("value does not parse: %w", err)
	}
	if r.Node != node {
		return scheduler.Replica{}, fmt.Errorf("value names node %q", shownKey(r.Node))
	}
	if err := checkReplicaFields(r); err != nil {
		return scheduler.Replica{}, err
	}
	return r, nil
}

// maxReplicaField bounds each text a replica publishes besides its name; a replica's own are
// far shorter.
const maxReplicaField = 256

// checkReplicaFields refuses an entry whose texts a replica would never publish: longer than
// maxReplicaField, or holding a control character (JSON decoding has replaced bytes that are
// not UTF-8 already). `status` prints them to a terminal, where an entry written by hand could
// otherwise retitle the window or clear it.
func checkReplicaFields(r scheduler.Replica) error {
	for _, f := range []struct{ name, v string }{{"version", r.Version}, {"table_hash", r.TableHash}, {"http_addr", r.HTTPAddr}} {
		switch {
		case len(f.v) > maxReplicaField:
			return fmt.Errorf("its %s is %d bytes long, more than %d", f.name, len(f.v), maxReplicaField)
		case strings.ContainsFunc(f.v, unicode.IsControl):
			return fmt.Errorf("its %s holds a control character", f.name)
		}
	}
	return nil
}

// TableHash returns a short, stable digest of a job table described as
// parts, one per job, each holding everything about the job that changes
// its behaviour (name, schedule, timezone, type, parameters...). The order
// of parts does not matter, so tables that list the same jobs differently
// agree. The result is 16 hex digits of SHA-256 and is the same in every
// process and build.
func TableHash(parts ...string) string {
	sorted := slices.Clone(parts)
	slices.Sort(sorted)
	h := sha256.New()
	var n [8]byte
	for _, p := range sorted {
		// Length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// HashGroups returns the node names of rs by table hash, each list sorted.
// More than one group means the replicas run different job tables.
func HashGroups(rs []scheduler.Replica) map[string][]string {
	g := make(map[string][]string)
	for _, r := range rs {
		g[r.TableHash] = append(g[r.TableHash], r.Node)
	}
	for _, nodes := range g {
		slices.Sort(nodes)
	}
	return g
}
