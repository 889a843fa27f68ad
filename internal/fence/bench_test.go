package fence

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"scheduler"
	"scheduler/internal/fence/internal/postgres"
	"scheduler/internal/testenv"
)

// Benchmarks run only with -bench. One run, side by side:
//
//	go test -run '^$' -bench . -benchtime 3s ./internal/fence/
//
// (An op of BenchmarkWrite is one transaction of every variant; one of
// BenchmarkLedger is one batch claimed and completed.)
//
// Each benchmark starts a Postgres cluster of its own with default settings
// (testenv.MustPostgres: fsync on, so every commit waits for a WAL flush, as
// in production), not the shared test cluster, which runs with fsync off.

// rtCounter is a pgx tracer counting round trips: one per query or batch,
// plus one per statement preparation.
type rtCounter struct{ n atomic.Int64 }

func (c *rtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *rtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *rtCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *rtCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *rtCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (c *rtCounter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *rtCounter) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// parallel runs op b.N times over writers goroutines and reports the
// throughput as unit/s (n units per op) and round trips per unit.
func parallel(b *testing.B, writers, n int, unit string, rt *rtCounter, op func(ctx context.Context, i int64) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.ResetTimer()
	elapsed, trips, err := spread(writers, int64(b.N), rt, func(i int64) error { return op(ctx, i) })
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	units := float64(b.N * n)
	b.ReportMetric(units/elapsed.Seconds(), unit+"/s")
	if rt != nil {
		b.ReportMetric(float64(trips)/units, "rt/"+unit)
	}
}

// spread makes count calls of op, numbered from 1, over writers goroutines,
// and returns how long they took, the round trips rt (if any) counted
// meanwhile, and the first error, after which a goroutine stops.
func spread(writers int, count int64, rt *rtCounter, op func(i int64) error) (time.Duration, int64, error) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, writers)
		rt0  int64
	)
	if rt != nil {
		rt0 = rt.n.Load()
	}
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for i := next.Add(1); i <= count; i = next.Add(1) {
				if err := op(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var trips int64
	if rt != nil {
		trips = rt.n.Load() - rt0
	}
	close(errs)
	return elapsed, trips, <-errs
}

// BenchmarkWrite compares transactions that insert one row, all writers
// with the same token on one job: plain (pgx.BeginTxFunc: BEGIN, INSERT,
// COMMIT, three round trips), fenced (Store.Fenced: BEGIN, the fence and
// the INSERT in one batch, then COMMIT), the row-lock FOR SHARE variant of
// the fence (fenced the same way), the UPDATE ... WHERE last_token <= $1
// fence (batched the same way), and plainbatch, a plain transaction batched
// like fenced, which separates the fence's own cost from the round trip the
// batching saves.
func BenchmarkWrite(b *testing.B) {
	dsn := testenv.MustPostgres(b).CreateDatabase(b)
	rt := &rtCounter{}
	s := mustOpen(b, Config{DSN: dsn, MaxConns: 20, tracer: rt})
	ctx := context.Background()
	p := s.b.(*postgres.Backend)
	for _, sql := range []string{
		`CREATE TABLE bench_rows (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, job text NOT NULL, token bigint NOT NULL, n bigint NOT NULL)`,
		`CREATE TABLE bench_fence (job text PRIMARY KEY, last_token bigint NOT NULL)`,
		`INSERT INTO bench_fence VALUES ('bench', 1)`,
		`CREATE SCHEMA mutant`,
		`CREATE FUNCTION mutant.for_share(p_job text, p_tok bigint) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
			DECLARE cur bigint;
			BEGIN
				INSERT INTO scheduler.job_fence (job, token) VALUES (p_job, p_tok) ON CONFLICT (job) DO NOTHING;
				UPDATE scheduler.job_fence SET token = p_tok WHERE job = p_job AND token < p_tok;
				SELECT token INTO cur FROM scheduler.job_fence WHERE job = p_job FOR SHARE;
				IF cur <> p_tok THEN RAISE EXCEPTION 'fenced out' USING ERRCODE = 'JF001'; END IF;
				RETURN cur;
			END $$`,
	} {
		if _, err := p.Pool().Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	forShare := mustOpen(b, Config{DSN: dsn, MaxConns: 20, tracer: rt})
	forShare.b.(*postgres.Backend).EnterWith(`SELECT mutant.for_share($1, $2)`)
	if err := s.RaiseAll(ctx, []string{"bench"}, 1); err != nil {
		b.Fatal(err)
	}
	const insert = `INSERT INTO bench_rows (job, token, n) VALUES ($1, $2, $3)`
	variants := []variant{
		{"plain", func(ctx context.Context, i int64) error {
			return pgx.BeginTxFunc(ctx, p.Pool(), pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, insert, "bench", 1, i)
				return err
			})
		}},
		{"fenced", func(ctx context.Context, i int64) error {
			return s.Fenced(ctx, "bench", 1, func(_ context.Context, tx scheduler.Tx) error {
				_, err := tx.Exec(ctx, insert, "bench", 1, i)
				return err
			})
		}},
		{"forshare", func(ctx context.Context, i int64) error {
			return forShare.Fenced(ctx, "bench", 1, func(_ context.Context, tx scheduler.Tx) error {
				_, err := tx.Exec(ctx, insert, "bench", 1, i)
				return err
			})
		}},
		{"update", func(ctx context.Context, i int64) error {
			// Batched like fenced (the insert rides with BEGIN and the
			// fence), so that only the locking differs.
			bt := &pgx.Batch{}
			bt.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
			var n int64
			bt.Queue(`UPDATE bench_fence SET last_token = $1 WHERE job = $2 AND last_token <= $1`, 1, "bench").
				Exec(func(ct pgconn.CommandTag) error { n = ct.RowsAffected(); return nil })
			bt.Queue(insert, "bench", 1, i)
			br := p.Pool().SendBatch(ctx, bt)
			tx := br.Tx()
			defer func() { _ = tx.Rollback(ctx) }()
			if err := br.Close(); err != nil {
				return err
			}
			if n != 1 {
				return fmt.Errorf("stale")
			}
			return tx.Commit(ctx)
		}},
		{"plainbatch", func(ctx context.Context, i int64) error {
			// A plain transaction with the same batching as fenced: what
			// the fence costs apart from the round trip it saves.
			bt := &pgx.Batch{}
			bt.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
			bt.Queue(insert, "bench", 1, i)
			br := p.Pool().SendBatch(ctx, bt)
			tx := br.Tx()
			defer func() { _ = tx.Rollback(ctx) }()
			if err := br.Close(); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}},
	}
	for _, writers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			interleave(b, writers, rt, variants)
		})
	}
}

// interleave runs b.N transactions of every variant, in slices: each round
// runs a slice of every variant, in an order that rotates from round to
// round, so that changes in the machine's background load hit all variants
// alike. It reports each variant's tx/s and round trips per transaction,
// and its throughput relative to the first variant.
func interleave(b *testing.B, writers int, rt *rtCounter, variants []variant) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	took := make([]time.Duration, len(variants))
	trips := make([]int64, len(variants))
	var seq atomic.Int64
	b.ResetTimer()
	for round, left := 0, b.N; left > 0; round++ {
		slice := min(left, 100+25*writers)
		left -= slice
		for k := range variants {
			i := (round + k) % len(variants)
			d, tr, err := spread(writers, int64(slice), rt, func(int64) error {
				if err := variants[i].op(ctx, seq.Add(1)); err != nil {
					return fmt.Errorf("%s: %w", variants[i].name, err)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			took[i] += d
			trips[i] += tr
		}
	}
	b.StopTimer()
	n := float64(b.N)
	base := n / took[0].Seconds()
	for i, v := range variants {
		tps := n / took[i].Seconds()
		b.ReportMetric(tps, v.name+"-tx/s")
		if rt != nil {
			b.ReportMetric(float64(trips[i])/n, v.name+"-rt/tx")
		}
		if i > 0 {
			b.ReportMetric(tps/base, v.name+"/"+variants[0].name)
		}
	}
}

// variant is one way of running a write transaction.
type variant struct {
	name string
	op   func(ctx context.Context, i int64) error
}

// BenchmarkLedger measures recording no-op runs: claim the slot (running),
// complete it (succeeded). batch=1 claims and completes one run per call;
// batch=100 claims 100 slots in one ClaimMany and completes them in one
// CompleteMany.
func BenchmarkLedger(b *testing.B) {
	rt := &rtCounter{}
	stores := map[string]*Store{
		"postgres": mustOpen(b, Config{DSN: testenv.MustPostgres(b).CreateDatabase(b), MaxConns: 20, tracer: rt}),
		"sqlite":   mustOpen(b, Config{Path: filepath.Join(b.TempDir(), "bench.db")}),
	}
	var slotSeq atomic.Int64
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, name := range []string{"postgres", "sqlite"} {
		s := stores[name]
		if err := s.RaiseAll(context.Background(), []string{"noop0", "noop1", "noop2", "noop3"}, 1); err != nil {
			b.Fatal(err)
		}
		for _, cfg := range []struct{ batch, writers int }{{1, 1}, {1, 16}, {100, 1}, {100, 4}} {
			counter := rt
			if name == "sqlite" {
				counter = nil // no round trips
			}
			b.Run(fmt.Sprintf("%s/batch=%d/writers=%d", name, cfg.batch, cfg.writers), func(b *testing.B) {
				parallel(b, cfg.writers, cfg.batch, "run", counter, func(ctx context.Context, i int64) error {
					slots := make([]scheduler.SlotKey, cfg.batch)
					for k := range slots {
						slots[k] = scheduler.SlotKey{Job: fmt.Sprintf("noop%d", k%4), At: base.Add(time.Duration(slotSeq.Add(1)) * time.Second)}
					}
					res, err := s.ClaimMany(ctx, 1, "bench", slots)
					if err != nil {
						return err
					}
					cs := make([]scheduler.Completion, len(res))
					for k, r := range res {
						if !r.Written {
							return fmt.Errorf("slot %v not claimed", r.Run.Key())
						}
						cs[k] = scheduler.Completion{RunID: r.Run.RunID, Job: r.Run.Job, Status: scheduler.StatusSucceeded}
					}
					done, err := s.CompleteMany(ctx, 1, cs)
					if err != nil {
						return err
					}
					for _, d := range done {
						if !d.Written {
							return fmt.Errorf("run %d not completed", d.Run.RunID)
						}
					}
					return nil
				})
			})
		}
	}
}
