package testenv

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// pgSuperuser is the superuser initdb creates; it logs in without a
	// password (trust authentication on loopback and the socket only).
	pgSuperuser = "postgres"
	// pgStartAttempts is how often the first start is retried on a fresh port
	// when the picked one was taken in the meantime.
	pgStartAttempts = 3
	// pgTimeout bounds initdb, start-up, shutdown and this package's queries.
	pgTimeout = 60 * time.Second
	// pgInstallHint tells how to get the server binaries.
	pgInstallHint = "install them with: apt-get install -y postgresql"
)

// Postgres is a throwaway PostgreSQL cluster: its own data directory in a
// fresh temporary directory, listening on 127.0.0.1 at a free port and on a
// unix socket in that directory, with trust authentication for the
// superuser "postgres".
//
// The postmaster runs as a child of the test process that the kernel kills
// when the test process dies (parent-death signal), so a crashed or timed
// out test binary leaves no server behind.
type Postgres struct {
	bin      string              // directory holding initdb and postgres
	dir      string              // root: data/, postgres.log, the unix socket
	settings []string            // extra "name=value" server settings
	cred     *syscall.Credential // nil unless the server runs as another user
	seq      atomic.Int64        // database name sequence
	dropDBs  bool                // drop databases at test cleanup (shared cluster)
	mu       sync.Mutex          // guards port and proc
	port     int                 // fixed after the first start
	proc     *pgProcess          // nil while stopped
}

// MustPostgres creates a dedicated cluster with default server settings
// except settings ("name=value", e.g. "fsync=off"), started and ready for
// connections. It is stopped and removed in tb.Cleanup. The server binaries
// come from PATH or the newest /usr/lib/postgresql/*/bin; when the test runs
// as root, the server runs as the "postgres" system user. Missing binaries
// fail tb with installation instructions.
func MustPostgres(tb testing.TB, settings ...string) *Postgres {
	tb.Helper()
	p, err := startPostgres(settings...)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	tb.Cleanup(func() {
		if err := p.destroy(); err != nil {
			tb.Errorf("testenv: %v", err)
		}
	})
	return p
}

// Addr returns the server's TCP address, "127.0.0.1:port". The port stays
// the same across Stop and Start.
func (p *Postgres) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))
}

// DSN returns a URL for database db as the superuser, without TLS:
// postgres://postgres@127.0.0.1:port/db?sslmode=disable.
func (p *Postgres) DSN(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(pgSuperuser),
		Host:     p.Addr(),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// CreateDatabase creates a fresh, uniquely named database and returns its
// DSN. On the shared cluster of MustDatabase the database is dropped in
// tb.Cleanup, its connections terminated; a dedicated cluster is removed
// as a whole instead.
func (p *Postgres) CreateDatabase(tb testing.TB) string {
	tb.Helper()
	name := dbName(tb.Name(), p.seq.Add(1))
	if err := p.exec(`CREATE DATABASE ` + pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("testenv: create database %s: %v", name, err)
	}
	if !p.dropDBs {
		return p.DSN(name)
	}
	tb.Cleanup(func() {
		if !p.running() {
			return
		}
		if err := p.exec(`DROP DATABASE IF EXISTS ` + pgx.Identifier{name}.Sanitize() + ` WITH (FORCE)`); err != nil {
			tb.Errorf("testenv: drop database %s: %v", name, err)
		}
	})
	return p.DSN(name)
}

// exec runs one statement in the postgres maintenance database.
func (p *Postgres) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", p.Addr(), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("exec on %s: %w", p.Addr(), err)
	}
	return nil
}

// dbName derives a valid, unique database name from a test name.
func dbName(test string, seq int64) string {
	var b strings.Builder
	b.WriteString("t_")
	for _, r := range strings.ToLower(test) {
		if b.Len() >= 40 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return fmt.Sprintf("%s_%d", b.String(), seq)
}

// Stop shuts the server down (fast shutdown: sessions are disconnected,
// data is checkpointed and kept). It fails tb if the server is not running.
func (p *Postgres) Stop(tb testing.TB) {
	tb.Helper()
	if !p.running() {
		tb.Fatalf("testenv: postgres on %s is not running", p.Addr())
	}
	if err := p.stop(syscall.SIGINT); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// Start starts the stopped server again on the same port and data.
func (p *Postgres) Start(tb testing.TB) {
	tb.Helper()
	if err := p.start(); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// Restart stops the server (fast shutdown) and starts it again on the same
// port and data.
func (p *Postgres) Restart(tb testing.TB) {
	tb.Helper()
	p.Stop(tb)
	p.Start(tb)
}
