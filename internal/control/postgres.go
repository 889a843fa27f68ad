package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"scheduler"
)

// Postgres keeps the same operations state as Store in the store's own
// PostgreSQL database, for the election backends that run without etcd
// (postgres, zookeeper, redis): they all need a shared Postgres store, so
// one implementation serves the three, and the state lives beside the run
// ledger that makes manual runs exactly-once. The tables are
// control_paused, control_trigger and control_replica in the store's
// schema (migration 00009), and control_backfill (migration 00011), revoked
// from PUBLIC: a job's database role can neither pause, trigger nor backfill.
//
// A replica entry carries an expiry judged by the database's clock, which
// the replica pushes forward while it runs; Replicas leaves out expired
// entries. Methods make one statement each and block until it answers or
// ctx ends. A Postgres is safe for concurrent use.
type Postgres struct {
	pool *pgxpool.Pool
	q    pgQueries
	now  func() time.Time // stamps pause records

	backfillTable string // control_backfill, quoted with its schema
}

// pgQueries are the statements, with the schema quoted in.
type pgQueries struct {
	pause, resume, paused, trigger, requests, done, register, replicas string
}

// NewPostgres returns a Postgres on pool for the tables in schema.
func NewPostgres(pool *pgxpool.Pool, schema string) (*Postgres, error) {
	if pool == nil {
		return nil, errors.New("control: nil pool")
	}
	if schema == "" {
		return nil, errors.New("control: empty schema")
	}
	t := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	return &Postgres{pool: pool, now: time.Now, backfillTable: t("control_backfill"), q: pgQueries{
		pause:    `INSERT INTO ` + t("control_paused") + ` (job, paused_by, paused_at) VALUES ($1, $2, $3) ON CONFLICT (job) DO NOTHING`,
		resume:   `DELETE FROM ` + t("control_paused") + ` WHERE job = $1`,
		paused:   `SELECT job, paused_by, CASE WHEN isfinite(paused_at) THEN paused_at ELSE 'epoch' END FROM ` + t("control_paused"),
		trigger:  `INSERT INTO ` + t("control_trigger") + ` (job, slot, requested_by) VALUES ($1, $2, $3) ON CONFLICT (job, slot) DO NOTHING`,
		requests: `SELECT job, slot, requested_by FROM ` + t("control_trigger") + ` WHERE isfinite(slot) ORDER BY slot, job`,
		done:     `DELETE FROM ` + t("control_trigger") + ` WHERE job = $1 AND slot = $2`,
		register: `INSERT INTO ` + t("control_replica") + ` (node, entry, expires_at)
			VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond')
			ON CONFLICT (node) DO UPDATE SET entry = EXCLUDED.entry, expires_at = EXCLUDED.expires_at`,
		replicas: `SELECT node, entry FROM ` + t("control_replica") + ` WHERE expires_at > clock_timestamp() AND isfinite(expires_at) ORDER BY node`,
	}}, nil
}

// Pause pauses job cluster-wide, as Store.Pause does.
func (s *Postgres) Pause(ctx context.Context, job, by string) (paused bool, err error) {
	if err := checkJob(job); err != nil {
		return false, fmt.Errorf("pause: %w", err)
	}
	tag, err := s.pool.Exec(ctx, s.q.pause, job, by, s.now().UTC().Truncate(time.Second))
	if err != nil {
		return false, fmt.Errorf("pause %q: %w", job, err)
	}
	return tag.RowsAffected() > 0, nil
}

// Resume lets job fire again, as Store.Resume does.
func (s *Postgres) Resume(ctx context.Context, job string) (resumed bool, err error) {
	if err := checkJob(job); err != nil {
		return false, fmt.Errorf("resume: %w", err)
	}
	tag, err := s.pool.Exec(ctx, s.q.resume, job)
	if err != nil {
		return false, fmt.Errorf("resume %q: %w", job, err)
	}
	return tag.RowsAffected() > 0, nil
}

// Paused returns the paused jobs by name, each record's by clipped as the etcd store's is: a
// row written by hand is shown on every refresh of the console and status. A time of infinity
// written by hand reads as the Unix epoch, rather than failing the read of every record.
func (s *Postgres) Paused(ctx context.Context) (map[string]PauseInfo, error) {
	rows, err := s.pool.Query(ctx, s.q.paused)
	if err != nil {
		return nil, fmt.Errorf("list paused jobs: %w", err)
	}
	out := map[string]PauseInfo{}
	var (
		job string
		pi  PauseInfo
	)
	_, err = pgx.ForEachRow(rows, []any{&job, &pi.By, &pi.At}, func() error {
		out[job] = PauseInfo{By: clipField(pi.By), At: pi.At.UTC()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list paused jobs: %w", err)
	}
	return out, nil
}

// Trigger records a request to run job once as the manual slot at, as
// Store.Trigger does.
func (s *Postgres) Trigger(ctx context.Context, job, by string, at time.Time) (Request, error) {
	if err := checkJob(job); err != nil {
		return Request{}, fmt.Errorf("trigger: %w", err)
	}
	at = at.UTC().Truncate(time.Microsecond)
	if err := checkRequestTime(at); err != nil {
		return Request{}, fmt.Errorf("trigger %q: %w", job, err)
	}
	if _, err := s.pool.Exec(ctx, s.q.trigger, job, at, by); err != nil {
		return Request{}, fmt.Errorf("trigger %q at %s: %w", job, at.Format(triggerLayout), err)
	}
	return pgRequest(job, at, by), nil
}

// pgRequest is a request as read from control_trigger; its Key names the row.
func pgRequest(job string, at time.Time, by string) Request {
	at = at.UTC()
	return Request{Job: job, At: at, By: clipField(by), Key: job + "/" + at.Format(triggerLayout)}
}

// Requests returns the pending requests, oldest first, leaving out rows that no Trigger writes
// (an infinite slot among them: it would fail the read of every request).
func (s *Postgres) Requests(ctx context.Context) ([]Request, error) {
	rows, err := s.pool.Query(ctx, s.q.requests)
	if err != nil {
		return nil, fmt.Errorf("list requests: %w", err)
	}
	var (
		rs      []Request
		job, by string
		at      time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&job, &at, &by}, func() error {
		// A row no Trigger writes (the zero time) would be retried by the leader for its whole term.
		if checkJob(job) == nil && checkRequestTime(at.UTC()) == nil {
			rs = append(rs, pgRequest(job, at, by))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list requests: %w", err)
	}
	sortRequests(rs)
	return rs, nil
}

// Done deletes a handled request. Deleting a request that is gone already
// is not an error.
func (s *Postgres) Done(ctx context.Context, r Request) error {
	if r.Key != pgRequest(r.Job, r.At, "").Key {
		return fmt.Errorf("done: key %q of job %q is not a request of this store", r.Key, r.Job)
	}
	if _, err := s.pool.Exec(ctx, s.q.done, r.Job, r.At.UTC()); err != nil {
		return fmt.Errorf("done with request %s: %w", r.Key, err)
	}
	return nil
}

// Register publishes r under its node name until ttl from now by the
// database's clock; the caller registers again well within ttl for as long
// as the replica runs, and whenever r changes. A replica with the same node
// name registered elsewhere is overwritten.
func (s *Postgres) Register(ctx context.Context, r scheduler.Replica, ttl time.Duration) error {
	if err := checkNode(r.Node); err != nil {
		return fmt.Errorf("register replica: %w", err)
	}
	if ttl <= 0 {
		return fmt.Errorf("register replica %q: ttl %v: the entry would not outlive the statement", r.Node, ttl)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("register replica %q: encode: %w", r.Node, err)
	}
	if _, err := s.pool.Exec(ctx, s.q.register, r.Node, b, ttl.Milliseconds()); err != nil {
		return fmt.Errorf("register replica %q: %w", r.Node, err)
	}
	return nil
}

// Replicas returns the replicas whose entries have not expired, by node
// name. An entry whose value does not parse, or holds a text no replica
// publishes (checkReplicaFields), is returned with its node name only; one
// whose node name no replica has, or that never expires (a row written by
// hand with an infinite expiry), is left out.
func (s *Postgres) Replicas(ctx context.Context) ([]scheduler.Replica, error) {
	rows, err := s.pool.Query(ctx, s.q.replicas)
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	var (
		rs    []scheduler.Replica
		node  string
		entry []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&node, &entry}, func() error {
		if checkNode(node) != nil {
			return nil // no replica's: a node name no replica registers (control characters, ...)
		}
		var r scheduler.Replica
		if json.Unmarshal(entry, &r) != nil || checkReplicaFields(r) != nil {
			r = scheduler.Replica{}
		}
		r.Node = node
		rs = append(rs, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	return rs, nil
}
