package main

import (
	"context"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/coord"
	"scheduler/internal/control"
)

// statusSource is what the daemon's /status and /readyz read: etcd's keys, or its observer and
// the store.
func (d *daemon) statusSource() statusSource {
	src := statusSource{cli: d.cli, prefix: d.cfg.Election.Prefix, ctl: d.control, store: d.store, problems: coord.Problems(d.camp, d.observer)}
	if d.cli == nil {
		src.leader = coord.Observed(d.observer)
	}
	return src
}

// statusSource is what a command's status reads: etcd's keys, or one read of the backend and
// the store.
func (s *session) statusSource() statusSource {
	src := statusSource{cli: s.cli, prefix: s.cfg.Election.Prefix, ctl: s.ctl, store: s.store}
	if s.cli == nil {
		src.leader = coord.ReadOnce(s.cfg, s.conns)
	}
	return src
}

// connectBackend opens a command's connections for a backend other than etcd: its control state
// lives in the store.
func connectBackend(ctx context.Context, cfg *config.Config) (*session, error) {
	conns, err := coord.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &session{cfg: cfg, conns: conns, close: conns.Close}
	if s.ctl, err = control.NewPostgres(conns.Pool, cfg.Store.Schema); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}
