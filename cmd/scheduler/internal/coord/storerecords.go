package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/control"
)

// Records returns where cfg's backend records the deployment's store, beside its election:
// etcd's PREFIX:store, a ZooKeeper node beside the election's path, a Redis key beside the
// lock. The postgres backend has none (nil): its election lives in the store itself, so a
// replica with another store is in another election, with its own fences, and cannot be told
// from another deployment. Nor has the embedded etcd: it lives in the replica's data_dir beside
// its SQLite store, and no other replica reaches it, so a record there would only get in the
// way of a development store made again.
func Records(cfg *config.Config, cli *clientv3.Client, rdb redis.UniversalClient) (StoreRecords, error) {
	switch cfg.Election.Backend {
	case config.BackendEtcd:
		if len(cfg.Etcd.Endpoints) == 0 {
			return nil, nil
		}
		s, err := control.New(cli, cfg.Election.Prefix)
		if err != nil {
			return nil, err
		}
		return etcdRecords{s}, nil
	case config.BackendRedis:
		return redisRecords{cli: rdb, key: cfg.Redis.Key + ":store"}, nil
	case config.BackendZooKeeper:
		return zkRecords{z: cfg.ZooKeeper, path: cfg.ZooKeeper.Path + ":store"}, nil
	}
	return nil, nil
}

// etcdRecords is the record in etcd, in one transaction (see control.Store.ClaimStore).
type etcdRecords struct{ s *control.Store }

func (r etcdRecords) Claim(ctx context.Context, id scheduler.StoreID, node string) (control.StoreRecord, error) {
	return r.s.ClaimStore(ctx, id, node)
}

func (r etcdRecords) Recorded(ctx context.Context) (control.StoreRecord, bool, error) {
	return r.s.RecordedStore(ctx)
}

func (r etcdRecords) Remove() string { return r.s.StoreRemoveCommand() }

// redisRecords is the record in a Redis key without expiry, written with SET NX.
type redisRecords struct {
	cli redis.UniversalClient
	key string
}

func (r redisRecords) Claim(ctx context.Context, id scheduler.StoreID, node string) (control.StoreRecord, error) {
	rec, b, err := control.EncodeStoreRecord(id, node, time.Now())
	if err != nil {
		return control.StoreRecord{}, err
	}
	set, err := r.cli.SetNX(ctx, r.key, b, 0).Result()
	if err != nil {
		return control.StoreRecord{}, fmt.Errorf("record the deployment's store at redis key %s: %w", r.key, err)
	}
	if set {
		return rec, nil
	}
	rec, ok, err := r.Recorded(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("record the deployment's store at redis key %s: removed while written", r.key)
	}
	return rec, err
}

func (r redisRecords) Recorded(ctx context.Context) (control.StoreRecord, bool, error) {
	b, err := r.cli.Get(ctx, r.key).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return control.StoreRecord{}, false, nil
	case err != nil:
		return control.StoreRecord{}, false, fmt.Errorf("read the deployment's store at redis key %s: %w", r.key, err)
	}
	rec, err := control.ParseStoreRecord("redis key "+r.key, b, r.Remove())
	return rec, err == nil, err
}

func (r redisRecords) Remove() string { return "redis-cli DEL " + r.key }

// zkRecords is the record in a persistent ZooKeeper node beside the election's, created once:
// a node under the election's path would be taken for a candidate. Each call opens a session of
// its own, as the commands' leader read does.
type zkRecords struct {
	z    config.ZooKeeperConfig
	path string
}

func (r zkRecords) Claim(ctx context.Context, id scheduler.StoreID, node string) (control.StoreRecord, error) {
	rec, b, err := control.EncodeStoreRecord(id, node, time.Now())
	if err != nil {
		return control.StoreRecord{}, err
	}
	err = withZooKeeper(ctx, r.z, func(conn *zk.Conn) error {
		_, err := conn.Create(r.path, b, 0, zk.WorldACL(zk.PermAll))
		return err
	})
	switch {
	case err == nil:
		return rec, nil
	case !errors.Is(err, zk.ErrNodeExists):
		return control.StoreRecord{}, fmt.Errorf("record the deployment's store at zookeeper node %s: %w", r.path, err)
	}
	rec, ok, err := r.Recorded(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("record the deployment's store at zookeeper node %s: removed while written", r.path)
	}
	return rec, err
}

func (r zkRecords) Recorded(ctx context.Context) (control.StoreRecord, bool, error) {
	var b []byte
	err := withZooKeeper(ctx, r.z, func(conn *zk.Conn) (err error) {
		b, _, err = conn.Get(r.path)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return control.StoreRecord{}, false, nil
	case err != nil:
		return control.StoreRecord{}, false, fmt.Errorf("read the deployment's store at zookeeper node %s: %w", r.path, err)
	}
	rec, err := control.ParseStoreRecord("zookeeper node "+r.path, b, r.Remove())
	return rec, err == nil, err
}

func (r zkRecords) Remove() string { return "zkCli.sh delete " + r.path }

var (
	_ StoreRecords = etcdRecords{}
	_ StoreRecords = redisRecords{}
	_ StoreRecords = zkRecords{}
)
