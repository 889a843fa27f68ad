package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"scheduler"
)

// Daemon is what the running daemon gives the server: its table as configured now (a reload
// replaces it), the reasons of the jobs its term has blocked, and the store's schema check.
type Daemon interface {
	Table() []Entry
	Blocked() []string
	CheckSchema(ctx context.Context) error
}

// Config configures a Server.
type Config struct {
	// Addr is the TCP address to listen on; port 0 picks a free port (see Server.Addr).
	Addr string
	// Explain words why a job is blocked.
	Explain Explain
	// Now is the clock of the status document. Default: time.Now.
	Now func() time.Time
	// ReadTimeout bounds the reading of one request, its body included. Default: readTimeout.
	ReadTimeout time.Duration

	// Console, when set, serves the web console at / and its document on /api/console.
	Console ConsoleSource
	// Node names this replica on the console's page.
	Node string
	// AdminToken enables the console's actions, carried out by Control, for requests bearing
	// it; empty keeps the console read-only.
	AdminToken string
	Control    Control
	// RunOutput, if set, serves GET /runs/{id}/output: the output of a run in progress on this
	// replica, streamed as it prints it.
	RunOutput http.Handler
}

// Timeouts of one request: the store and etcd must answer well within a scrape interval.
const (
	statusTimeout = 5 * time.Second
	readyTimeout  = 2 * time.Second
)

// readTimeout bounds the reading of a whole request, its body included: a client that sends a
// body a byte at a time cannot hold a connection for ever. A stream of run output, which reads
// nothing once its request is in, lifts it (streaming).
const readTimeout = 30 * time.Second

// idleTimeout closes a kept-alive connection that sends no request: a client cannot hold
// connections, and their goroutines, open for ever.
const idleTimeout = 2 * time.Minute

// metricsInFlight bounds the scrapes served at once: each reads the outbox's summary from the
// store. Prometheus scrapes one at a time; a scrape beyond it is answered 503.
const metricsInFlight = 3

// shutdownTimeout bounds how long Run waits for requests in flight once its context ends.
const shutdownTimeout = 5 * time.Second

// Server serves /healthz, /readyz, /metrics, /status and /table.
type Server struct {
	cfg Config
	src Source
	d   Daemon
	m   *Metrics
	lg  *zap.Logger
	ln  net.Listener
	srv *http.Server

	token    atomic.Pointer[string]      // the admin token in force (adminToken)
	origins  *http.CrossOriginProtection // the console's actions come from its own page
	refusals *rate.Sometimes             // bounds the log lines of refused actions
	// streams ends the streaming responses and the shared reads when the server shuts
	// down (streaming).
	streams    context.Context
	endStreams context.CancelFunc
	open       streamCount // the run output streams open, by client

	// The documents that read the store and the coordinator, shared by concurrent requests.
	statusDoc  *shared[Doc]
	consoleDoc *shared[ConsoleDoc]
	ready      *shared[error]
}

// New listens on cfg.Addr, so that an address in use fails at start, and returns the server
// that Run serves there.
func New(cfg Config, src Source, d Daemon, m *Metrics, lg *zap.Logger) (*Server, error) {
	switch {
	case src == nil || d == nil || m == nil || lg == nil:
		return nil, errors.New("status: New needs a source, a daemon, metrics and a logger")
	case cfg.Explain.Blocked == nil || cfg.Explain.Held == nil:
		return nil, errors.New("status: New needs both explanations of a blocked job")
	case cfg.AdminToken != "" && (cfg.Console == nil || cfg.Control == nil):
		return nil, errors.New("status: an admin token needs the console and its control")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = readTimeout
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("status server: %w", err)
	}
	s := &Server{cfg: cfg, src: src, d: d, m: m, lg: lg, ln: boundListener(ln),
		origins: http.NewCrossOriginProtection(), refusals: &rate.Sometimes{First: 10, Interval: 10 * time.Second}}
	s.streams, s.endStreams = context.WithCancel(context.Background())
	s.statusDoc = newShared(s.streams, statusTimeout, func(ctx context.Context) Doc {
		return Collect(ctx, src, cfg.Explain, d.Table(), cfg.Now())
	})
	s.consoleDoc = newShared(s.streams, statusTimeout, func(ctx context.Context) ConsoleDoc {
		return CollectConsole(ctx, src, cfg.Console, cfg.Explain, d.Table(), cfg.Now())
	})
	s.ready = newShared(s.streams, readyTimeout, func(ctx context.Context) error {
		return Ready(ctx, src, d, cfg.Explain)
	})
	s.srv = &http.Server{Handler: loopbackHosts(ln.Addr(), s.Handler()),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: cfg.ReadTimeout, IdleTimeout: idleTimeout}
	s.srv.RegisterOnShutdown(s.endStreams)
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Run serves until ctx ends, then shuts the server down, waiting a bounded time for the
// requests in flight. It returns the error that stopped serving before ctx ended.
func (s *Server) Run(ctx context.Context) error {
	s.lg.Info("http listening", zap.String("addr", s.ln.Addr().String()))
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http on %s: %w", s.ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	_ = s.srv.Shutdown(sctx)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http on %s: %w", s.ln.Addr(), err)
	}
	return nil
}

// Handler serves the operations endpoints, and the web console when configured.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.cfg.RunOutput != nil {
		mux.Handle("GET /runs/{id}/output", s.streaming(s.cfg.RunOutput))
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{Registry: s.m.reg, MaxRequestsInFlight: metricsInFlight}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		doc, err := s.statusDoc.get(r.Context())
		if err != nil {
			return // the client went away
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(doc)
	})
	mux.HandleFunc("GET /table", s.table)
	if s.cfg.Console != nil {
		s.consoleRoutes(mux)
	}
	return mux
}

// readyz answers 200 when the coordinator and the store answer, the schema is current, the election works
// and no job is blocked, else 503 with what is wrong.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	err, gone := s.ready.get(r.Context())
	if gone != nil {
		return // the client went away
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// Ready returns nil when etcd (or, with another backend, the control state in the store) and the
// store answer, the schema is current, the election works and no job is blocked, and otherwise
// every problem, joined, each named after the place ex says it is read from. It reads the
// election once.
func Ready(ctx context.Context, src Source, d Daemon, ex Explain) error {
	electionAt, controlAt := ex.places()
	var problems []error
	rs, err := src.Replicas(ctx)
	if err != nil {
		problems = append(problems, fmt.Errorf("%s: read the replicas: %w", controlAt, err))
		rs = nil
	} else if rs == nil {
		rs = []scheduler.Replica{}
	}
	if e, err := src.Election(ctx, rs); err != nil {
		problems = append(problems, fmt.Errorf("%s: %w", electionAt, err))
	} else {
		for _, p := range e.Problems {
			problems = append(problems, errors.New("election: "+p))
		}
	}
	if err := d.CheckSchema(ctx); err != nil {
		problems = append(problems, fmt.Errorf("store: %w", err))
	}
	for _, b := range d.Blocked() {
		problems = append(problems, errors.New(b))
	}
	return errors.Join(problems...)
}
