package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrNoLeader is returned by ReadLeader when no candidate holds the
// election.
var ErrNoLeader = errors.New("election: no leader")

// Leader is who holds an election, as read from etcd.
type Leader struct {
	// Node is the value of the leader key: the leader's replica name.
	Node string
	// Token is the leader key's create revision, the leader's fencing
	// token.
	Token int64
	// Since is when the leader won its term, by the leader's clock, if it
	// published it; else when an Observer first saw this token; else zero.
	Since time.Time
	// Key is the leader key.
	Key string
	// Lease is the lease the leader key is bound to.
	Lease int64
}

// termKey is where a leader publishes its term: the election name plus
// ".term". That is a sibling of the election, outside Prefix + "/": a key
// under the election prefix would itself take part in the election. The
// key is bound to the leader's lease, and ownership moves with every put,
// so it disappears with the last leader's lease.
func termKey(prefix string) string {
	return prefix + ".term"
}

// termRecord is the value stored at termKey.
type termRecord struct {
	Node  string    `json:"node"`
	Token int64     `json:"token"`
	Since time.Time `json:"since"`
}

// encodeTermRecord returns the termKey value for t.
func encodeTermRecord(t Term) (string, error) {
	b, err := json.Marshal(termRecord{Node: t.Node, Token: t.Token, Since: t.Since})
	if err != nil {
		return "", fmt.Errorf("encode term %d: %w", t.Token, err)
	}
	return string(b), nil
}

// ReadLeader reads who holds the election prefix right now: the candidate
// key with the lowest create revision, which is what `etcdctl elect
// --listen` and Election.Leader report too. It returns ErrNoLeader when
// there is none, and also when that key is bound to no lease: no replica
// writes such a key, and every candidate waits behind it (see
// ReadLeaseless).
//
// A process that holds the election is not necessarily acting as leader:
// it may be paused, partitioned or still confirming its campaign. The
// fence, not this answer, decides whose writes count.
func ReadLeader(ctx context.Context, cli *clientv3.Client, prefix string) (Leader, error) {
	l, _, _, err := readLeader(ctx, cli, prefix)
	return l, err
}

// readLeader is ReadLeader that also returns the lease-less keys under the
// prefix and the revision it read at.
func readLeader(ctx context.Context, cli *clientv3.Client, prefix string) (Leader, []Candidate, int64, error) {
	resp, err := cli.Txn(clientv3.WithRequireLeader(ctx)).Then(
		clientv3.OpGet(prefix+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)),
		clientv3.OpGet(termKey(prefix)),
	).Commit()
	if err != nil {
		return Leader{}, nil, 0, fmt.Errorf("read leader of %s: %w", prefix, err)
	}
	rev := resp.Header.Revision
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	var stray []Candidate
	for _, kv := range kvs {
		if kv.Lease == 0 {
			stray = append(stray, Candidate{Node: string(kv.Value), Rev: kv.CreateRevision, Key: string(kv.Key)})
		}
	}
	if len(kvs) == 0 {
		return Leader{}, nil, rev, fmt.Errorf("read leader of %s: %w", prefix, ErrNoLeader)
	}
	kv := kvs[0]
	if kv.Lease == 0 {
		return Leader{}, stray, rev, fmt.Errorf("read leader of %s: lease-less key %s comes first: %w", prefix, kv.Key, ErrNoLeader)
	}
	l := Leader{
		Node:  string(kv.Value),
		Token: kv.CreateRevision,
		Key:   string(kv.Key),
		Lease: kv.Lease,
	}
	if tkvs := resp.Responses[1].GetResponseRange().GetKvs(); len(tkvs) > 0 {
		var rec termRecord
		// A record that does not parse or belongs to another term leaves
		// Since zero: it is informative only. The leader puts its record on
		// the lease of its key; one on another lease, or naming another
		// node, was written by someone else, and would vouch for a foreign
		// key as a replica's term (see ForeignLeader).
		if json.Unmarshal(tkvs[0].Value, &rec) == nil && rec.Token == l.Token && rec.Node == l.Node && tkvs[0].Lease == kv.Lease {
			l.Since = rec.Since
		}
	}
	return l, stray, rev, nil
}

// Candidate is one key under an election prefix: a replica that leads or
// queues for leadership.
type Candidate struct {
	// Node is the key's value, the replica's name.
	Node string
	// Rev is the key's create revision: the token the replica leads with
	// once it is first in line.
	Rev int64
	// Key is the candidate key.
	Key string
	// Lease is the lease the key is bound to.
	Lease int64
}

// ReadCandidates reads every candidate of the election prefix in the order
// they lead: by create revision, the leader (if any) first. A replica
// between two campaign rounds has no key for a moment and is missing.
func ReadCandidates(ctx context.Context, cli *clientv3.Client, prefix string) ([]Candidate, error) {
	resp, err := cli.Get(clientv3.WithRequireLeader(ctx), prefix+"/",
		clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("read candidates of %s: %w", prefix, err)
	}
	out := make([]Candidate, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		out[i] = Candidate{Node: string(kv.Value), Rev: kv.CreateRevision, Key: string(kv.Key), Lease: kv.Lease}
	}
	return out, nil
}
