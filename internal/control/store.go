package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Store reads and writes the operations state of one election prefix. Its
// methods make one etcd request each (a Get, Put, Delete or Txn) and block
// until it answers or ctx ends. A Store is safe for concurrent use.
type Store struct {
	cli *clientv3.Client
	k   keys
	now func() time.Time // stamps pause records
}

// New returns a Store for the keys beside the election prefix (as in the
// election's configuration: starting with "/", without a trailing "/").
func New(cli *clientv3.Client, prefix string) (*Store, error) {
	if cli == nil {
		return nil, errors.New("control: nil etcd client")
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	return &Store{cli: cli, k: keys{prefix: prefix}, now: time.Now}, nil
}

// list returns the keys under prefix and their values; what names them in
// the error.
func (s *Store) list(ctx context.Context, what, prefix string) ([]*mvccpb.KeyValue, error) {
	resp, err := s.cli.Get(rctx(ctx), prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list %s under %s: %w", what, prefix, err)
	}
	return resp.Kvs, nil
}

// rctx marks ctx so that an etcd member without a raft leader fails the
// request at once instead of holding it until ctx ends.
func rctx(ctx context.Context) context.Context {
	return clientv3.WithRequireLeader(ctx)
}
