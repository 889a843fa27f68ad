package coord

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/fence"
)

// CheckStore returns why store, named name, the store of the configuration cfg, is not the
// deployment's store recorded beside cfg's election, or nothing: what `status` says when it is
// run with a misconfigured replica's file. cli and rdb are the commands' connections to etcd
// and Redis, as cfg's backend needs.
func CheckStore(ctx context.Context, cfg *config.Config, cli *clientv3.Client, rdb redis.UniversalClient, store *fence.Store, name string) []string {
	recs, err := Records(cfg, cli, rdb)
	if err != nil || recs == nil || store == nil {
		return nil
	}
	rec, ok, err := recs.Recorded(ctx)
	switch {
	case err != nil:
		return []string{err.Error()}
	case !ok:
		return nil
	}
	own, err := store.Identity(ctx, name)
	if err != nil {
		return []string{fmt.Sprintf("read this configuration's store identity: %v", err)}
	}
	if rec.Store.Same(own) {
		return nil
	}
	return []string{otherStore("this configuration's", "a replica started with it does not lead", own, rec, recs.Remove())}
}
