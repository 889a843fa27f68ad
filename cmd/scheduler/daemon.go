package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"scheduler"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/coord"
	"scheduler/cmd/scheduler/internal/outboxmetrics"
	"scheduler/cmd/scheduler/internal/redact"
	"scheduler/cmd/scheduler/internal/startup"
	"scheduler/cmd/scheduler/internal/triggers"
	"scheduler/internal/datadir"
	"scheduler/internal/election"
	"scheduler/internal/fence"
	"scheduler/internal/harden"
	"scheduler/internal/jobs"
	"scheduler/internal/kinds"
	"scheduler/internal/outbox"
	"scheduler/internal/retention"
	"scheduler/internal/runlog"
	"scheduler/internal/status"
)

// daemon is `scheduler run`: one replica of the cluster.
type daemon struct {
	cfg     *config.Config // as loaded at start: a reload replaces only the table (see reload)
	path    string
	node    string // the --node flag, which overrides the file's node
	environ []string
	quiet   time.Duration // how long a reloaded file must not change; 0: reloadQuiet
	lg      *zap.Logger   // carries the node field
	base    *zap.Logger   // without it
	m       *status.Metrics

	cli      *clientv3.Client // etcd backend only
	store    *fence.Store
	storeID  scheduler.StoreID // published, and judged against the deployment's (coord.Records)
	control  controlState
	watcher  controlWatch
	reg      registration // this replica's entry in etcd or the store; a reload republishes it
	observer coord.View
	runner   *jobs.Runner
	triggers *triggers.Handler // hands the trigger requests to the runner
	pruner   *retention.Pruner
	outbox   *outbox.Dispatcher
	camp     coord.Coordinator
	conns    coord.Conns // the other backends' connections
	http     *status.Server
	live     *runlog.Book // the output of the runs in progress, served at /runs/{id}/output
	scrub    redact.Live  // the secrets and credentials scrubbed from what runs print
	started  time.Time

	// specs is the runner's table at start, built from cfg before anything connected.
	specs []jobs.Spec

	// mu guards the table as configured and its hash, which a reload replaces together with
	// the runner's table, and serialises reloads.
	mu   sync.Mutex
	jobs []config.Job // the table as configured, replaced by a reload
	hash string       // its config.TableHash
	// names are the jobs' names, replaced with jobs but read without mu (see isJob).
	names atomic.Pointer[map[string]bool]

	digests jobDigests // of the jobs, for /status and /table
}

// table returns the configured jobs and their hash.
func (d *daemon) table() ([]config.Job, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.jobs, d.hash
}

// usesDataDir reports whether the daemon keeps anything in data_dir: the embedded etcd when the
// etcd backend has no endpoints configured, the SQLite store when no DSN is.
func usesDataDir(cfg *config.Config) bool {
	return cfg.Election.Backend == config.BackendEtcd && len(cfg.Etcd.Endpoints) == 0 || cfg.Store.DSN == ""
}

// runDaemon starts every part of the daemon, waits for a signal (or a part failing), and shuts
// down in this order:
//  1. stop firing new slots; running jobs get up to shutdown_grace to finish, and the writes
//     of their outcomes are retried within it, then they are cancelled (their ledger rows stay
//     running, so the next leader takes them over); the outbox claims nothing more, and its
//     deliveries in flight get what is left of the grace to end and be recorded;
//  2. end the leadership term: lead returns and the campaigner resigns, so a follower takes
//     over at once instead of waiting out the lease;
//  3. stop the watchers, the replica registration and the HTTP server;
//  4. close the store and the backend's connections (the etcd client and the embedded etcd).
//
// A second SIGINT or SIGTERM exits at once (main restores the default action).
func runDaemon(ctx context.Context, c *cli, node string) (err error) {
	// Before anything reads a secret (the config, its secret files, the environment into
	// memory): from here on no process of the daemon's uid can read its environ or memory.
	dumpErr := harden.NonDumpable()
	// Before the first job starts: files the daemon was started with stay out of its jobs.
	filesErr := harden.CloseOnExec()
	// The whole table is built before anything connects, as `validate` builds it, so that a
	// configuration validate refuses is refused here before anything starts.
	l, err := config.LoadForRun(c.configPath, c.environ, kinds.CurrentUserSwitch())
	if err != nil {
		return err
	}
	if err := l.OverrideNode(node); err != nil {
		return &usageError{err}
	}
	cfg := l.Config
	lg, err := newLogger(cfg.Log, c.stderr)
	if err != nil {
		return err
	}
	base := lg // the campaigner adds the node itself
	lg = lg.With(zap.String("node", cfg.Node))
	defer func() { _ = lg.Sync() }()
	if dumpErr != nil {
		// Going on is the lesser harm: the jobs are as exposed as they were before this check.
		lg.Error("cannot hide the daemon's memory from its jobs", zap.Error(dumpErr))
	}
	if filesErr != nil {
		lg.Error("cannot keep the files the daemon inherited from its jobs", zap.Error(filesErr))
	}
	if mode := redact.Exposed(c.configPath, cfg.Secrets()); mode != 0 {
		lg.Warn("the configuration file holds a secret and every local user, exec jobs included, may read it: chmod o-r it, or move the secret to a *_file key",
			zap.String("file", c.configPath), zap.String("mode", fmt.Sprintf("%04o", mode)))
	}
	m, err := newMetrics(cfg)
	if err != nil {
		return err
	}
	d := &daemon{cfg: cfg, path: c.configPath, node: node, environ: c.environ, lg: lg, base: base, m: m,
		specs: l.Table, jobs: cfg.Jobs, hash: l.Hash, started: time.Now()}
	d.setNames(cfg.Jobs)

	// 4 (deferred, so it runs last): close what was opened. The data_dir lock comes first, so
	// that a second daemon on the directory fails before it waits on the embedded etcd's files.
	if usesDataDir(cfg) {
		lock, err := datadir.Acquire(cfg.DataDir, cfg.Node)
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	endpoints := cfg.Etcd.Endpoints
	if cfg.Election.Backend != config.BackendEtcd {
		if d.conns, err = coord.Open(ctx, cfg); err != nil {
			return err
		}
		defer d.conns.Close()
	} else {
		if len(endpoints) == 0 {
			emb, err := election.StartEmbedded(ctx, embeddedEtcdDir(cfg), lg.Named("etcd"))
			if err != nil {
				return fmt.Errorf("start the embedded etcd in %s: %w", cfg.DataDir, err)
			}
			defer emb.Close()
			endpoints = emb.Endpoints()
		}
		if d.cli, err = election.NewClient(clientConfig(cfg, endpoints), lg.Named("etcd-client")); err != nil {
			return fmt.Errorf("connect to etcd: %w", err)
		}
		defer d.cli.Close()
	}
	if d.store, err = startup.Store(ctx, lg, storeName(cfg), func(ctx context.Context) (*fence.Store, error) {
		return openStore(ctx, cfg, lg)
	}); err != nil {
		if ctx.Err() != nil {
			lg.Info("stopped before the store answered")
			return nil
		}
		return err
	}
	defer d.store.Close()
	if d.storeID, err = d.store.Identity(ctx, storeName(cfg)); err != nil {
		return err
	}
	lg.Info("starting", zap.String("version", version), zap.String("store", storeName(cfg)),
		zap.String("backend", cfg.Election.Backend), zap.Strings("etcd", endpoints), zap.Int("jobs", len(cfg.Jobs)), zap.String("table_hash", l.Hash))
	if cfg.Store.JobDSN != "" {
		lg.Info("sql jobs run on their own connection", zap.String("job_store", redact.DSN(cfg.Store.JobDSN)))
	} else if j := config.RoleWithoutJobDSN(cfg); j != "" {
		lg.Warn("sql job roles are no boundary without store.job_dsn: the statements can RESET ROLE to the scheduler's own",
			zap.String("job", j))
	}
	if err := d.build(); err != nil {
		return err
	}
	if cfg.HTTP.Addr != "" {
		if d.http, err = d.newHTTP(); err != nil {
			return err
		}
	}
	return d.serve(ctx)
}

// build creates the parts that need no goroutine yet.
func (d *daemon) build() error {
	var err error
	if err = d.buildControl(); err != nil {
		return err
	}
	d.camp, d.observer, err = coord.New(d.cfg, coord.Deps{Etcd: d.cli, Pool: d.conns.Pool, Redis: d.conns.Redis, Logger: d.base, Metrics: d.m,
		Store: d.storeID, Replicas: statusSource{ctl: d.control}.Replicas})
	if err != nil {
		return err
	}
	// One scrubber for the ledger's outputs, the live ones and the outbox's errors; a reload
	// gives it the new table's credentials.
	d.scrub.Add(append(d.cfg.Secrets(), d.cfg.Credentials()...)...)
	d.live = runlog.New(nil, &d.scrub)
	d.runner, err = jobs.New(d.specs, jobs.Options{
		Node: d.cfg.Node, Ledger: d.store, Logger: d.lg.Named("runner"), Live: d.live,
		Paused: d.watcher.Paused, Hooks: runnerHooks(d.m), Scrub: d.scrub.Scrub,
		// A refusal by the store for one job ends the term only if the backend no longer confirms it.
		Confirm: func(ctx context.Context, token int64) error { return d.camp.Confirm(ctx, token) },
	})
	if err != nil {
		return err
	}
	d.triggers = &triggers.Handler{Runner: d.runner, Requests: d.control, Log: d.lg, MaxAge: d.maxAge}
	d.pruner, err = retention.New(retention.Config{
		Ledger: d.store, Policies: d.retention,
		Batch: d.cfg.History.PruneBatch, Pause: d.cfg.History.PrunePause, Interval: d.cfg.History.PruneInterval,
		Logger: d.lg, Pruned: d.m.Pruned,
	})
	if err != nil {
		return err
	}
	d.outbox, err = newDispatcher(d.cfg.Outbox, d.store, d.lg, outboxmetrics.Register(d.m.Registry(), d.store, d.lg, time.Now), d.deadNotice,
		d.scrub.Scrub)
	return err
}

// newHTTP returns the status server of d, listening on http.addr.
func (d *daemon) newHTTP() (*status.Server, error) {
	s, err := status.New(d.statusConfig(), d.statusSource(), statusView{d}, d.m, d.lg.Named("http"))
	if err != nil {
		return nil, fmt.Errorf("http.addr: %w", err)
	}
	return s, nil
}

// serve runs the parts until ctx ends or one fails, then shuts down in order.
func (d *daemon) serve(ctx context.Context) error {
	campCtx, endTerm := context.WithCancel(context.WithoutCancel(ctx))
	defer endTerm()
	svcCtx, stopServices := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServices()
	failed := make(chan error, 8)
	var g errgroup.Group
	part := func(name string, run func(context.Context) error, pctx context.Context) {
		g.Go(func() error {
			err := run(pctx)
			if err != nil && pctx.Err() == nil {
				failed <- fmt.Errorf("%s: %w", name, err)
			}
			return nil
		})
	}
	part("election", d.campaign, campCtx)
	part("control watcher", d.watcher.Run, svcCtx)
	part("leader observer", d.observer.Run, svcCtx)
	part("trigger requests", func(c context.Context) error { return d.triggers.Consume(c, d.watcher.Requests()) }, svcCtx)
	part("replica registration", d.reg.Run, svcCtx)
	part("reload", d.reloadOnHUP, svcCtx)
	if d.cli != nil {
		part("etcd version check", func(c context.Context) error {
			election.CheckServerVersions(c, d.cli, d.lg)
			return nil
		}, svcCtx)
	}
	if d.http != nil {
		part("http", d.http.Run, svcCtx)
	}

	var cause error
	select {
	case <-ctx.Done():
		d.lg.Info("shutting down", zap.Duration("grace", d.cfg.ShutdownGrace))
	case cause = <-failed:
		d.lg.Error("shutting down after a failure", zap.Error(cause))
	}
	// 1. Stop firing; let running jobs and deliveries in flight end within the grace (see above).
	grace, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownGrace)
	d.runner.Drain(grace)
	d.outbox.Drain(grace)
	cancel()
	// 2. End the term; the campaigner resigns for an immediate handover.
	endTerm()
	// 3. Stop the rest.
	stopServices()
	_ = g.Wait()
	d.lg.Info("stopped")
	return cause
}

// lead is one leadership term: publish nothing but metrics here; the runner does the work.
func (d *daemon) lead(ctx context.Context, t scheduler.Term) error {
	d.lg.Info("leading", zap.Int64("token", t.Token), zap.Time("since", t.Since))
	// A fence that holds the new token already was raised by another election's term.
	if err := coord.TokenTaken(ctx, d.store, t.Token, d.names.Load()); err != nil {
		d.lg.Error("term refused", zap.Int64("token", t.Token), zap.Error(err))
		return err
	}
	// Fire nothing before the paused set is known, or a paused job could run once.
	select {
	case <-d.watcher.Ready():
	case <-ctx.Done():
		return nil
	}
	// The runner stops too when the outbox finds the term fenced out.
	rctx, endRun := context.WithCancel(ctx)
	defer endRun()
	// Begun here, not in the goroutine: the helpers' first commands must find the term.
	run, err := d.runner.Begin(t.Token)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- run(rctx) }()
	// The term's helpers live as long as the term, on a context of their own so that they also
	// stop when the runner returns first; they are joined before the term ends.
	hctx, stopHelpers := context.WithCancel(ctx)
	var helpers sync.WaitGroup
	helpers.Add(4)
	fenced := make(chan error, 1)
	// Triggers sent while no replica led are waiting in the control state: run them now, and
	// again those kept for a job held back.
	go func() {
		defer helpers.Done()
		d.triggers.Pending(hctx)
	}()
	// Backfill requests, those an earlier term left half done first.
	go func() {
		defer helpers.Done()
		d.runBackfills(hctx, t.Token)
	}()
	go func() {
		defer helpers.Done()
		if err := d.pruner.Run(hctx, t.Token); err != nil {
			d.lg.Warn("pruning stopped for this term", zap.Int64("token", t.Token), zap.Error(err))
		}
	}()
	go func() {
		defer helpers.Done()
		if err := d.dispatch(hctx, t.Token); err != nil {
			fenced <- err
			endRun()
		}
	}()
	err = <-errc
	stopHelpers()
	helpers.Wait()
	// A refusal of the outbox's fence ended the runner: it is the term's reason.
	select {
	case err = <-fenced:
	default:
	}
	return err
}

// replica is this replica's entry in the registry, with the table hash it runs now.
func (d *daemon) replica() scheduler.Replica {
	addr := ""
	if d.http != nil {
		addr = d.http.Addr().String()
	}
	_, hash := d.table()
	return scheduler.Replica{Node: d.cfg.Node, Version: version, TableHash: hash, HTTPAddr: addr, StartedAt: d.started, Store: &d.storeID}
}
