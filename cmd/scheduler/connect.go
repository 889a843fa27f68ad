package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/redact"
	"scheduler/internal/datadir"
	"scheduler/internal/election"
	"scheduler/internal/fence"
)

// embeddedEtcdDir is the directory the development etcd is given: it keeps its data in
// data_dir/etcd and records its address in data_dir/etcd.endpoint.
func embeddedEtcdDir(cfg *config.Config) string { return cfg.DataDir }

// sqlitePath is the embedded store's file, under data_dir.
func sqlitePath(cfg *config.Config) string { return filepath.Join(cfg.DataDir, "scheduler.db") }

// clientConfig is the etcd client part of the configuration.
func clientConfig(cfg *config.Config, endpoints []string) election.ClientConfig {
	return election.ClientConfig{
		Endpoints: endpoints, DialTimeout: cfg.Etcd.DialTimeout,
		Username: cfg.Etcd.Username, Password: cfg.Etcd.Password,
		CAFile: cfg.Etcd.TLS.CAFile, CertFile: cfg.Etcd.TLS.CertFile, KeyFile: cfg.Etcd.TLS.KeyFile,
	}
}

// dialEtcd connects a command to the configured etcd or, with no endpoints configured, to the
// embedded etcd a running daemon started in data_dir.
func dialEtcd(cfg *config.Config, lg *zap.Logger) (*clientv3.Client, error) {
	endpoints := cfg.Etcd.Endpoints
	if len(endpoints) == 0 {
		eps, err := election.EmbeddedEndpoints(embeddedEtcdDir(cfg))
		if err != nil {
			return nil, fmt.Errorf("etcd.endpoints is empty and no embedded etcd is running (start `scheduler run` with this configuration first): %w", err)
		}
		endpoints = eps
	}
	cli, err := election.NewClient(clientConfig(cfg, endpoints), lg)
	if err != nil {
		return nil, fmt.Errorf("connect to etcd: %w", err)
	}
	return cli, nil
}

// openStore opens the configured Postgres store, or the existing embedded SQLite one in
// data_dir. Only `migrate` creates a store (see createStore): a command run with the wrong
// data_dir must say so, not leave an empty database behind.
func openStore(ctx context.Context, cfg *config.Config, lg *zap.Logger) (*fence.Store, error) {
	if cfg.Store.DSN == "" {
		if _, err := os.Stat(sqlitePath(cfg)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("no store at %s: run `scheduler migrate` with this configuration first", sqlitePath(cfg))
			}
			return nil, fmt.Errorf("store %s: %w", sqlitePath(cfg), err)
		}
	}
	return dialStore(ctx, cfg, lg)
}

// createStore opens the store like openStore, creating data_dir and the SQLite file when they
// do not exist yet.
func createStore(ctx context.Context, cfg *config.Config, lg *zap.Logger) (*fence.Store, error) {
	if cfg.Store.DSN == "" {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("data_dir: %w", err)
		}
		if err := datadir.CreatePrivate(sqlitePath(cfg)); err != nil {
			return nil, fmt.Errorf("create the store %s: %w", sqlitePath(cfg), err)
		}
	}
	return dialStore(ctx, cfg, lg)
}

func dialStore(ctx context.Context, cfg *config.Config, lg *zap.Logger) (*fence.Store, error) {
	fc := fence.Config{DSN: cfg.Store.DSN, JobDSN: cfg.Store.JobDSN, Schema: cfg.Store.Schema, Path: sqlitePath(cfg)}
	s, err := fence.Open(ctx, fc, lg.Named("store"))
	if err != nil {
		return nil, fmt.Errorf("open the store (%s): %w", storeName(cfg), err)
	}
	return s, nil
}

// storeName describes the store without secrets, for messages.
func storeName(cfg *config.Config) string {
	if cfg.Store.DSN == "" {
		return "sqlite " + sqlitePath(cfg)
	}
	return "postgres " + redact.DSN(cfg.Store.DSN)
}
