package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"scheduler/internal/election"
)

// handler serves the read-only operations endpoints. Nothing here changes state: pausing,
// resuming and triggering go through etcd, or the store with another backend, with their
// authentication.
func (d *daemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", d.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.m.reg, promhttp.HandlerOpts{Registry: d.m.reg}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		table, _ := d.table()
		doc := collectStatus(ctx, table, d.leaderSource(), d.control, d.store, time.Now())
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(doc)
	})
	return mux
}

// readyz answers 200 when etcd and the store answer, the schema is current and no job is
// blocked, else 503 with what is wrong.
func (d *daemon) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var problems []error
	if d.cli == nil {
		// Another backend keeps the control state in the store; its campaigner logs its own trouble.
		if _, err := d.control.Replicas(ctx); err != nil {
			problems = append(problems, fmt.Errorf("control state: %w", err))
		}
	} else if _, err := d.cli.Get(clientv3.WithRequireLeader(ctx), d.cfg.Election.Prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		problems = append(problems, fmt.Errorf("etcd: %w", err))
	} else if stray, err := readLeaseless(ctx, d.cli, d.cfg.Election.Prefix); err != nil {
		problems = append(problems, fmt.Errorf("etcd: %w", err))
	} else {
		for _, l := range stray {
			problems = append(problems, errors.New("election: "+l.problem()))
		}
		if p, err := d.foreignLeader(ctx); err != nil {
			problems = append(problems, fmt.Errorf("etcd: %w", err))
		} else if p != "" {
			problems = append(problems, errors.New("election: "+p))
		}
	}
	if err := d.store.CheckSchema(ctx); err != nil {
		problems = append(problems, fmt.Errorf("store: %w", err))
	}
	for _, b := range d.runner.Blocked() {
		problems = append(problems, errors.New(b.Reason))
	}
	if err := errors.Join(problems...); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// foreignLeader reads the leader and the replicas and describes a leader key that names no
// replica (see foreignLeader); "" when a replica leads or none does.
func (d *daemon) foreignLeader(ctx context.Context) (string, error) {
	l, err := election.ReadLeader(ctx, d.cli, d.cfg.Election.Prefix)
	if errors.Is(err, election.ErrNoLeader) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	rs, err := d.control.Replicas(ctx)
	if err != nil {
		return "", fmt.Errorf("read the replicas: %w", err)
	}
	return foreignLeader(l, rs), nil
}

// serveHTTP serves until ctx ends, then shuts the server down.
func (d *daemon) serveHTTP(ctx context.Context) error {
	d.lg.Info("http listening", zap.String("addr", d.listener.Addr().String()))
	errc := make(chan error, 1)
	go func() { errc <- d.http.Serve(d.listener) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = d.http.Shutdown(sctx)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
