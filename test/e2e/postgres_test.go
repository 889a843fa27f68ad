package e2e

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"scheduler/internal/testenv"
)

// pgServer is the Postgres the replicas write to: one throwaway cluster for the whole suite, or
// the external server of E2E_POSTGRES_DSN. Every scenario gets a fresh database on it.
type pgServer struct {
	own   *testenv.Postgres
	admin string // external: a DSN whose user may create databases
}

func newPGServer(t *testing.T, env externalEnv) *pgServer {
	t.Helper()
	if env.postgres != "" {
		return &pgServer{admin: env.postgres}
	}
	return &pgServer{own: testenv.MustPostgres(t, "fsync=off", "synchronous_commit=off", "full_page_writes=off",
		// What a failed scenario's output shows of the server: who waited on a lock, and which
		// session of which replica and database.
		"log_lock_waits=on", "log_line_prefix=%m [%p] %a@%d ")}
}

// database creates a fresh database and returns its DSN (a URL, sslmode as the server needs).
func (s *pgServer) database(t *testing.T) string {
	t.Helper()
	if s.own != nil {
		return s.own.CreateDatabase(t)
	}
	name := "e2e_" + strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "_"), "_")
	name = fmt.Sprintf("%.40s_%d", name, time.Now().UnixNano()%1e9)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := adminExec(ctx, s.admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s with E2E_POSTGRES_DSN: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := adminExec(ctx, s.admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(s.admin)
	if err != nil || u.Scheme == "" {
		t.Fatalf("E2E_POSTGRES_DSN must be a postgres:// URL")
	}
	u.Path = "/" + name
	return u.String()
}

func adminExec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// viaProxy returns dsn with its host replaced by addr and the application name set, so that
// the audit triggers can tell the replicas' sessions apart.
func viaProxy(t *testing.T, dsn, addr, app string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse dsn: %v", err)
	}
	u.Host = addr
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// auditSQL records, in the scenario's database, every raise of a fence (by which session) and
// every statement writing the ledger or the invoices (by which session, under which fence).
// The fence makes every write commit under its own term's fence, so a write whose session is
// not the one that raised the fence it committed under is a stale write that got through. The
// audit's fence of a write is the newest of the jobs' fences, not the outbox's: these tables are
// written by jobs only, and a term raises the outbox's fence on its own, maybe first, while an
// older term's write to a job whose fence is still its own is rightly accepted.
// Statement triggers fire even for statements that change no row (a claim that conflicts, an
// update of a finished run), so such stale writes are seen too. The trigger functions run as
// their owner: a write of any role is audited, and a role refused a write is refused for its own
// rights, not for want of rights on the audit tables.
const auditSQL = `
CREATE SCHEMA e2e;
CREATE TABLE e2e.raises (job text NOT NULL, token bigint NOT NULL, writer text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE e2e.writes (tbl text NOT NULL, op text NOT NULL, writer text NOT NULL, fence bigint,
    at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION e2e.raised() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO e2e.raises (job, token, writer) VALUES (NEW.job, NEW.token, current_setting('application_name'));
    RETURN NULL;
END $$;
CREATE FUNCTION e2e.written() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO e2e.writes (tbl, op, writer, fence)
    VALUES (TG_TABLE_NAME, TG_OP, current_setting('application_name'), (SELECT max(token) FROM scheduler.job_fence WHERE job <> '@outbox'));
    RETURN NULL;
END $$;
CREATE TRIGGER e2e_raised AFTER INSERT OR UPDATE ON scheduler.job_fence FOR EACH ROW EXECUTE FUNCTION e2e.raised();
CREATE TRIGGER e2e_written AFTER INSERT OR UPDATE OR DELETE ON scheduler.runs FOR EACH STATEMENT EXECUTE FUNCTION e2e.written();
CREATE TRIGGER e2e_written AFTER INSERT OR UPDATE OR DELETE ON public.invoices FOR EACH STATEMENT EXECUTE FUNCTION e2e.written();
`

// openDB opens the suite's own pool on dsn, closed in t.Cleanup.
func openDB(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(viaProxy(t, dsn, mustHost(t, dsn), "e2e-test"))
	if err != nil {
		t.Fatalf("parse dsn: %v", err)
	}
	cfg.MaxConns = 4
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to postgres: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}

func mustHost(t *testing.T, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse dsn: %v", err)
	}
	return u.Host
}

// ledgerRow is a row of the run ledger.
type ledgerRow struct {
	RunID    int64
	Job      string
	Slot     time.Time
	Manual   bool
	Status   string
	Token    int64
	Node     string
	Attempt  int
	Started  *time.Time
	Finished *time.Time
	Error    string
	Reason   string
}

// invoice is a row of public.invoices.
type invoice struct {
	Client  int
	Month   string
	Token   int64
	Created time.Time
}

// raise and write are rows of the audit tables.
type raise struct {
	Job    string
	Token  int64
	Writer string
	At     time.Time
}

type write struct {
	Table, Op, Writer string
	Fence             *int64
	At                time.Time
}

// snapshot is the data of one scenario's database at one moment.
type snapshot struct {
	runs     []ledgerRow
	invoices []invoice
	raises   []raise
	writes   []write
}

// readSnapshot reads the ledger, the invoices and the audit tables.
func readSnapshot(ctx context.Context, db *pgxpool.Pool) (snapshot, error) {
	var s snapshot
	rows, err := db.Query(ctx, `SELECT run_id, job, scheduled_at, manual, status, token, node, attempt,
		started_at, finished_at, error, reason FROM scheduler.runs ORDER BY job, scheduled_at, manual`)
	if err != nil {
		return s, fmt.Errorf("read the ledger: %w", err)
	}
	s.runs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledgerRow, error) {
		var l ledgerRow
		err := r.Scan(&l.RunID, &l.Job, &l.Slot, &l.Manual, &l.Status, &l.Token, &l.Node, &l.Attempt,
			&l.Started, &l.Finished, &l.Error, &l.Reason)
		l.Slot = l.Slot.UTC()
		return l, err
	})
	if err != nil {
		return s, fmt.Errorf("read the ledger: %w", err)
	}
	rows, err = db.Query(ctx, `SELECT client_id, month, token, created_at FROM public.invoices ORDER BY month, client_id`)
	if err != nil {
		return s, fmt.Errorf("read the invoices: %w", err)
	}
	s.invoices, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (invoice, error) {
		var i invoice
		return i, r.Scan(&i.Client, &i.Month, &i.Token, &i.Created)
	})
	if err != nil {
		return s, fmt.Errorf("read the invoices: %w", err)
	}
	rows, err = db.Query(ctx, `SELECT job, token, writer, at FROM e2e.raises ORDER BY at`)
	if err != nil {
		return s, fmt.Errorf("read the raises: %w", err)
	}
	s.raises, err = pgx.CollectRows(rows, pgx.RowToStructByPos[raise])
	if err != nil {
		return s, fmt.Errorf("read the raises: %w", err)
	}
	rows, err = db.Query(ctx, `SELECT tbl, op, writer, fence, at FROM e2e.writes ORDER BY at`)
	if err != nil {
		return s, fmt.Errorf("read the writes: %w", err)
	}
	s.writes, err = pgx.CollectRows(rows, pgx.RowToStructByPos[write])
	if err != nil {
		return s, fmt.Errorf("read the writes: %w", err)
	}
	return s, nil
}

// slotRuns returns the scheduled (not manual) runs of job by slot.
func (s snapshot) slotRuns(job string) map[time.Time]ledgerRow {
	out := map[time.Time]ledgerRow{}
	for _, r := range s.runs {
		if r.Job == job && !r.Manual {
			out[r.Slot] = r
		}
	}
	return out
}

// invoicesOf returns the invoices of one slot (period: slot writes the slot's RFC 3339 time).
func (s snapshot) invoicesOf(slot time.Time) []invoice {
	month := slot.UTC().Format(time.RFC3339)
	var out []invoice
	for _, i := range s.invoices {
		if i.Month == month {
			out = append(out, i)
		}
	}
	return out
}

// mustURLPath returns the path of the URL dsn: the database.
func mustURLPath(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse dsn: %v", err)
	}
	return u.Path
}
