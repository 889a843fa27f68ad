package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// prefixReads counts the reads of a client that touch keys under prefix, in a Get or a Txn.
type prefixReads struct {
	clientv3.KV
	prefix string
	n      atomic.Int64
}

func (k *prefixReads) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if strings.HasPrefix(key, k.prefix) {
		k.n.Add(1)
	}
	return k.KV.Get(ctx, key, opts...)
}

func (k *prefixReads) Txn(ctx context.Context) clientv3.Txn {
	return &prefixTxn{Txn: k.KV.Txn(ctx), k: k}
}

type prefixTxn struct {
	clientv3.Txn
	k *prefixReads
}

func (t *prefixTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }

func (t *prefixTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		if op.IsGet() && strings.HasPrefix(string(op.KeyBytes()), t.k.prefix) {
			t.k.n.Add(1)
			break
		}
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *prefixTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

// TestReadyz_ReadsElectionPrefixOnce checks that one /readyz request reads the election prefix
// once: the leader, the lease-less keys and whether etcd answers come from one read.
func TestReadyz_ReadsElectionPrefixOnce(t *testing.T) {
	c := newCluster(t, "", "")
	d := buildDaemon(t, c)
	kv := &prefixReads{KV: d.cli.KV, prefix: d.cfg.Election.Prefix + "/"}
	d.cli.KV = kv
	s, err := d.newHTTP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Run(canceled()) })
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if n := kv.n.Load(); n != 1 {
		t.Fatalf("reads of the election prefix=%d, want 1 (readyz answered %d %s)", n, rec.Code, rec.Body)
	}
}

// canceled returns a context that has ended, for a Run that only has to release its listener.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
