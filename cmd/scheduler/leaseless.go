package main

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/internal/election"
)

// leaselessDoc is a key under the election prefix bound to no lease, in `status --json` and
// /status: no replica writes such a key, and it blocks every candidate behind it.
type leaselessDoc struct {
	Key            string `json:"key"`
	Value          string `json:"value"`
	CreateRevision int64  `json:"create_revision"`
	Remove         string `json:"remove"` // the etcdctl command that deletes it
}

// maxShownValue bounds how much of such a key's value status shows: someone else wrote it.
const maxShownValue = 256

// readLeaseless reads the lease-less keys under the election prefix for status and readyz.
func readLeaseless(ctx context.Context, cli *clientv3.Client, prefix string) ([]leaselessDoc, error) {
	cs, err := election.ReadLeaseless(ctx, cli, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]leaselessDoc, len(cs))
	for i, c := range cs {
		v := c.Node
		if len(v) > maxShownValue {
			v = v[:maxShownValue] + "…"
		}
		out[i] = leaselessDoc{Key: c.Key, Value: v, CreateRevision: c.Rev, Remove: election.RemoveCommand(c.Key)}
	}
	return out, nil
}

// problem describes the key for a warning or a readiness failure, with the command that
// removes it.
func (l leaselessDoc) problem() string {
	return fmt.Sprintf("lease-less key %s (value %q, create revision %d) under the election prefix: "+
		"no replica writes such a key, and it blocks every candidate behind it until it is removed "+
		"(a campaigning replica removes it once it stands before its own key); remove it now with: %s",
		l.Key, l.Value, l.CreateRevision, l.Remove)
}
