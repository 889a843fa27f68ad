// Package coord builds the replica's leader election from its configuration, whichever backend
// it names (etcd, postgres, zookeeper, redis), and reads who leads for the commands: each backend
// reduced to what the daemon and the commands need of it, its terms handed over as the
// scheduler's Term. It also keeps a replica whose store is not the deployment's from leading
// (see Records).
package coord

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/election"
	"scheduler/internal/lease"
	"scheduler/internal/pglease"
	"scheduler/internal/redislock"
	"scheduler/internal/status"
	"scheduler/internal/zkelection"
)

// LeadFunc is what the daemon does during one term, whichever backend granted it.
type LeadFunc = func(ctx context.Context, t scheduler.Term) error

// Coordinator is what the daemon needs of a leader election: campaign and call lead once per
// term won, with a context cancelled before the backend can grant the next term; confirm that
// a term is still held when the store refuses its token for one job; say whether this replica
// leads, and why it does not campaign when its store is not the deployment's ("" while it
// may).
type Coordinator interface {
	backend
	StoreProblem() string
}

// backend is a backend's campaigner, reduced to the scheduler's Term.
type backend interface {
	Run(ctx context.Context, lead LeadFunc) error
	Confirm(ctx context.Context, token int64) error
	Leading() (scheduler.Term, bool)
}

// View is a follower-side view of who leads, for status and metrics; never evidence that
// this replica leads.
type View interface {
	Run(ctx context.Context) error
	Current() (Seen, bool)
}

// Seen is who leads as a View last saw it.
type Seen struct {
	Node  string
	Token int64
	// Since is when the term started by the leader's clock, when the backend knows it (etcd);
	// else when the lease was granted by the database's clock (postgres); else zero. A
	// ZooKeeper candidate node is created when the replica starts to wait, not when it starts
	// to lead, so its creation time would make status report a new leader's jobs held.
	Since time.Time
	// Held names what holds the election (a lease row, a lock, a candidate node), and End the
	// command that ends that hold, for a leader that names no replica.
	Held, End string
	// Problems describe what the read found keeping the election from working, each with its
	// remedy; set also when the read says that nobody leads.
	Problems []string
}

// Deps are the connections a backend may use, opened by the daemon, and the metrics its terms
// and leader changes feed.
type Deps struct {
	Etcd    *clientv3.Client // etcd only
	Pool    *pgxpool.Pool    // the store's database: postgres's lease, redis's floor
	Redis   redis.UniversalClient
	Logger  *zap.Logger // without the node field: each campaigner adds it
	Metrics *status.Metrics
	// Store is this replica's store; when set, the campaigner campaigns only while the store
	// recorded beside the election (Records) is this one or none is.
	Store scheduler.StoreID
	// Replicas reads the registered replicas, so that the observer of a backend other than etcd
	// logs a hold of the election by none of them; nil: not judged.
	Replicas func(ctx context.Context) ([]scheduler.Replica, error)
}

// New builds the campaigner and the observer of cfg.Election.Backend.
func New(cfg *config.Config, deps Deps) (Coordinator, View, error) {
	b, v, err := newBackend(cfg, deps)
	if err != nil {
		return nil, nil, err
	}
	if cv, ok := v.(countedView); ok {
		cv.node, cv.leading, cv.self, cv.ttl = cfg.Node, b.Leading, &atomic.Pointer[string]{}, cfg.Election.TTL
		v = cv
	}
	g := &storeGate{backend: b, own: deps.Store, node: cfg.Node, every: cfg.Election.TTL,
		lg: deps.Logger.Named("store-check").With(zap.String("node", cfg.Node))}
	if deps.Store.ID != "" {
		if g.rec, err = Records(cfg, deps.Etcd, deps.Redis); err != nil {
			return nil, nil, err
		}
	}
	if g.rec == nil {
		return passThrough{b}, v, nil
	}
	return g, v, nil
}

// passThrough is a backend whose replicas are not judged by their store.
type passThrough struct{ backend }

func (passThrough) StoreProblem() string { return "" }

// newBackend builds the campaigner and the observer of cfg.Election.Backend.
func newBackend(cfg *config.Config, deps Deps) (backend, View, error) {
	switch cfg.Election.Backend {
	case config.BackendEtcd:
		return newEtcd(cfg, deps)
	case config.BackendPostgres:
		c, err := pglease.New(deps.Pool, pglease.Config{
			Schema: cfg.Store.Schema, Name: LeaseName, Node: cfg.Node, TTL: cfg.Election.TTL,
			Events: pglease.Events{OnElected: elected(deps.Metrics), OnLost: func(_ scheduler.Term, r lease.Reason) { deps.Metrics.Lost(string(r)) }},
		}, deps.Logger)
		if err != nil {
			return nil, nil, fmt.Errorf("election.backend postgres: %w", err)
		}
		o, err := pglease.NewObserver(deps.Pool, cfg.Store.Schema, LeaseName, cfg.Election.TTL, deps.Logger)
		if err != nil {
			return nil, nil, fmt.Errorf("election.backend postgres: %w", err)
		}
		return pgCoordinator{c}, countedView{View: pgView{o, cfg.Store.Schema}, inc: deps.Metrics.LeaderChanged, lg: deps.Logger, replicas: deps.Replicas}, nil
	case config.BackendZooKeeper:
		z := cfg.ZooKeeper
		c, err := zkelection.New(zkelection.Config{
			Servers: z.Servers, SessionTimeout: z.SessionTimeout, Path: z.Path, Node: cfg.Node,
			Events: zkelection.Events{OnElected: elected(deps.Metrics), OnLost: func(_ scheduler.Term, r lease.Reason) { deps.Metrics.Lost(string(r)) }},
		}, deps.Logger)
		if err != nil {
			return nil, nil, fmt.Errorf("election.backend zookeeper: %w", err)
		}
		o, err := zkelection.NewObserver(z.Servers, z.SessionTimeout, z.Path, deps.Logger)
		if err != nil {
			return nil, nil, fmt.Errorf("election.backend zookeeper: %w", err)
		}
		return zkCoordinator{c}, countedView{View: zkView{o}, inc: deps.Metrics.LeaderChanged, lg: deps.Logger, replicas: deps.Replicas}, nil
	case config.BackendRedis:
		redislock.ClientLogs(deps.Logger)
		c, err := redislock.New(deps.Redis, redislock.Config{
			Key: cfg.Redis.Key, Node: cfg.Node, TTL: cfg.Election.TTL, Floor: FenceFloor(deps.Pool, cfg.Store.Schema),
			Events: redislock.Events{OnElected: elected(deps.Metrics), OnLost: func(_ scheduler.Term, r lease.Reason) { deps.Metrics.Lost(string(r)) }},
		}, deps.Logger)
		if err != nil {
			return nil, nil, fmt.Errorf("election.backend redis: %w", err)
		}
		o, err := redislock.NewObserver(deps.Redis, cfg.Redis.Key, cfg.Election.TTL, deps.Logger)
		if err != nil {
			return nil, nil, fmt.Errorf("election.backend redis: %w", err)
		}
		return redisCoordinator{c}, countedView{View: redisView{o, cfg.Redis.Key, cfg.Redis.DB}, inc: deps.Metrics.LeaderChanged, lg: deps.Logger, replicas: deps.Replicas}, nil
	}
	return nil, nil, fmt.Errorf("election.backend %q: unknown", cfg.Election.Backend)
}

// LeaseName is the postgres backend's election: its row in leader_lease. One store serves one
// scheduler cluster, as its fence does.
const LeaseName = "scheduler"

// newEtcd builds the etcd campaigner and observer.
func newEtcd(cfg *config.Config, deps Deps) (backend, View, error) {
	c, err := election.New(deps.Etcd, election.Config{
		Prefix: cfg.Election.Prefix, Node: cfg.Node, TTL: cfg.Election.TTL, Events: election.Events{
			OnElected: func(t election.Term) { deps.Metrics.Elected(t.Token) },
			OnLost:    func(_ election.Term, reason election.Reason) { deps.Metrics.Lost(string(reason)) },
		},
	}, deps.Logger)
	if err != nil {
		return nil, nil, err
	}
	o, err := election.NewObserver(deps.Etcd, cfg.Election.Prefix, deps.Logger.With(zap.String("node", cfg.Node)))
	if err != nil {
		return nil, nil, err
	}
	o.OnChange(func(_ election.Leader, ok bool) {
		if ok {
			deps.Metrics.LeaderChanged()
		}
	})
	// The observer counts the leaders itself; the view judges a hold that names no replica.
	return etcdCoordinator{c}, countedView{View: etcdView{o}, lg: deps.Logger, replicas: deps.Replicas}, nil
}

// FenceFloor reads the store's highest fence, below which the redis backend never takes a
// token: Redis can lose its counter, the store is the source of truth for the newest token.
func FenceFloor(pool *pgxpool.Pool, schema string) func(context.Context) (int64, error) {
	q := `SELECT coalesce(max(token), 0) FROM ` + pgx.Identifier{schema, "job_fence"}.Sanitize()
	return func(ctx context.Context) (int64, error) {
		var n int64
		if err := pool.QueryRow(ctx, q).Scan(&n); err != nil {
			return 0, fmt.Errorf("read the store's highest fence: %w", err)
		}
		return n, nil
	}
}

// elected feeds any backend's terms won into m; their ends go to m.Lost with the backend's reason.
func elected(m *status.Metrics) func(scheduler.Term) {
	return func(t scheduler.Term) { m.Elected(t.Token) }
}

// etcdCoordinator hands the etcd campaigner's terms over as the scheduler's Term.
type etcdCoordinator struct{ c *election.Campaigner }

func (e etcdCoordinator) Run(ctx context.Context, lead LeadFunc) error {
	return e.c.Run(ctx, func(ctx context.Context, t election.Term) error { return lead(ctx, etcdTerm(t)) })
}

func (e etcdCoordinator) Confirm(ctx context.Context, token int64) error {
	return e.c.Confirm(ctx, token)
}

func (e etcdCoordinator) Leading() (scheduler.Term, bool) {
	t, ok := e.c.Leading()
	return etcdTerm(t), ok
}

// etcdTerm is the one place the etcd backend's richer term becomes the scheduler's.
func etcdTerm(t election.Term) scheduler.Term {
	return scheduler.Term{Token: t.Token, Node: t.Node, Since: t.Since}
}

// The other backends' terms are the scheduler's Term already; only their LeadFunc types differ.
type (
	pgCoordinator    struct{ *pglease.Campaigner }
	zkCoordinator    struct{ *zkelection.Campaigner }
	redisCoordinator struct{ *redislock.Campaigner }
)

func (c pgCoordinator) Run(ctx context.Context, lead LeadFunc) error {
	return c.Campaigner.Run(ctx, lead)
}

func (c zkCoordinator) Run(ctx context.Context, lead LeadFunc) error {
	return c.Campaigner.Run(ctx, lead)
}

func (c redisCoordinator) Run(ctx context.Context, lead LeadFunc) error {
	return c.Campaigner.Run(ctx, lead)
}

// The observers, each reduced to the leader status shows.
type (
	etcdView struct{ *election.Observer }
	pgView   struct {
		*pglease.Observer
		schema string
	}
	zkView    struct{ *zkelection.Observer }
	redisView struct {
		*redislock.Observer
		key string
		db  int
	}
)

func (v etcdView) Current() (Seen, bool) {
	l, ok := v.Observer.Current()
	return Seen{Node: l.Node, Token: l.Token, Since: l.Since,
		Held: fmt.Sprintf("the key %s (lease %x)", l.Key, l.Lease), End: fmt.Sprintf("etcdctl lease revoke %x", l.Lease)}, ok
}

func (v pgView) Current() (Seen, bool) {
	l, ok := v.Observer.Current()
	return pgSeen(l, v.schema, v.Observer.Problems()), ok
}

func (v zkView) Current() (Seen, bool) {
	l, ok := v.Observer.Current()
	return zkSeen(l, v.Observer.Problems()), ok
}

func (v redisView) Current() (Seen, bool) {
	l, ok := v.Observer.Current()
	return redisSeen(l, v.key, v.db, v.Observer.Problems()), ok
}

// countedView counts the leaders its view sees take over, for the observers without a change
// hook: it reads the view every countEvery while Run runs. A leader that comes and goes within
// one reading is not counted. It logs, at error level, every problem the view reports when it
// first appears, and a leader that names no registered replica (read every judgeEvery).
type countedView struct {
	View
	inc      func() // nil: the view counts its leaders itself
	lg       *zap.Logger
	replicas func(ctx context.Context) ([]scheduler.Replica, error) // nil: a foreign hold is not judged
	// node and leading are this replica's, to judge a hold in its name that is not its own; the
	// judgement, once the hold has outlived what this replica's last process could leave behind
	// (selfHold, ttl), is kept in self for the replica's status (Problems).
	node    string
	leading func() (scheduler.Term, bool)
	self    *atomic.Pointer[string]
	ttl     time.Duration
}

// countEvery is how often a countedView reads its view, and judgeEvery how often it reads the
// registered replicas to judge the leader.
const (
	countEvery = 100 * time.Millisecond
	judgeEvery = 5 * time.Second
)

// judge returns the problem of a leader l that names no registered replica, or "".
func (v countedView) judge(ctx context.Context, l Seen, ok bool) string {
	if !ok {
		return ""
	}
	rctx, cancel := context.WithTimeout(ctx, judgeEvery)
	defer cancel()
	rs, err := v.replicas(rctx)
	if err != nil {
		return "" // the registry's readers report it
	}
	return foreign(l, rs)
}

func (v countedView) Run(ctx context.Context) error {
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		var (
			last     int64
			logged   []string
			outsider string // the leader's judgement, once two in a row agree
			previous string // the last judgement of the leader
			judged   time.Time
			hold     = selfHold{ttl: v.ttl}
		)
		t := time.NewTicker(countEvery)
		defer t.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-t.C:
			}
			l, ok := v.Current()
			if ok && l.Token != last {
				last = l.Token
				if v.inc != nil {
					v.inc()
				}
			}
			if v.replicas != nil && time.Since(judged) >= judgeEvery {
				// Logged once two judgements in a row find the same hold naming no replica: a
				// killed leader's entry can leave the registry a moment before its hold ends.
				j := v.judge(cctx, l, ok)
				if outsider = ""; j == previous {
					outsider = j
				}
				judged, previous = time.Now(), j
				self := hold.judge(judged, impersonated(l, ok, v.node, v.leading), l.Token)
				if outsider = cmp.Or(self, outsider); v.self != nil {
					v.self.Store(&self)
				}
			}
			problems := l.Problems
			if outsider != "" {
				problems = append(slices.Clone(problems), outsider)
			}
			logged = logProblems(v.lg, problems, logged)
		}
	})
	defer func() {
		stop()
		wg.Wait()
	}()
	return v.View.Run(ctx)
}

var (
	_ backend     = etcdCoordinator{}
	_ backend     = pgCoordinator{}
	_ backend     = zkCoordinator{}
	_ backend     = redisCoordinator{}
	_ Coordinator = (*storeGate)(nil)
	_ Coordinator = passThrough{}
	_ View        = etcdView{}
	_ View        = pgView{}
	_ View        = zkView{}
	_ View        = redisView{}
)
