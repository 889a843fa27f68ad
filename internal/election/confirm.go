package election

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Confirm asks etcd, in one linearizable transaction, whether the term with token is still
// this campaigner's: it holds a term with that token, its leader key exists with create revision
// token, and no older candidate key is left under the prefix. nil means confirmed. A leader that
// the store refuses for one job calls it to tell a newer leader (Confirm fails) from a fence
// raised from outside or revisions gone backwards (Confirm succeeds). The answer is a snapshot:
// what a leader does still hangs off the term's context.
func (c *Campaigner) Confirm(ctx context.Context, token int64) error {
	t, ok := c.Leading()
	switch {
	case !ok:
		return fmt.Errorf("confirm term %d: no term held: %w", token, errNotConfirmed)
	case t.Token != token:
		return fmt.Errorf("confirm term %d: the term held has token %d: %w", token, t.Token, errNotConfirmed)
	}
	cctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), requestTimeout(c.cfg.TTL))
	defer cancel()
	resp, err := c.cli.Txn(cctx).If(
		clientv3.Compare(clientv3.CreateRevision(t.Key), "=", token),
		clientv3.Compare(clientv3.CreateRevision(c.cfg.Prefix+"/"), ">", token-1).WithPrefix(),
	).Else(
		clientv3.OpGet(t.Key, clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return fmt.Errorf("confirm term %d of %s: %w", token, t.Key, err)
	}
	if !resp.Succeeded {
		why := "an older candidate key exists"
		switch kvs := resp.Responses[0].GetResponseRange().GetKvs(); {
		case len(kvs) == 0:
			why = "the leader key is gone"
		case kvs[0].CreateRevision != token:
			why = fmt.Sprintf("the leader key was created again, at revision %d", kvs[0].CreateRevision)
		}
		return fmt.Errorf("confirm term %d of %s: %s: %w", token, t.Key, why, errNotConfirmed)
	}
	return nil
}
