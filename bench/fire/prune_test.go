package fire

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler/internal/fence"
	"scheduler/internal/retention"
	"scheduler/internal/testenv"
)

// Ledger pruning beside a herd: BenchmarkPruneBesideHerd fills a Postgres ledger with 10,000,000
// finished runs (10,000 for each of the 1,000 jobs of the table, an hour apart, the newest a day
// old, so that about four in five are beyond the default max_age of 2160h), then measures the
// herd's fire delay with the pruner off and on, alternately, three times each, on that one ledger:
//
//	go test -run '^$' -bench PruneBesideHerd -benchtime 1x -timeout 30m ./bench/fire/
//
// The pruner runs with the daemon's defaults (batches of 500, 200ms between them) from a second
// after the takeover, so it deletes throughout the measured herds.

const (
	pruneJobs       = 1000
	pruneRowsPerJob = 10000
)

func BenchmarkPruneBesideHerd(b *testing.B) {
	pg := testenv.MustPostgres(b)
	dsn := pg.CreateDatabase(b)
	start := time.Now()
	fillPruneLedger(b, dsn)
	b.Logf("ledger of %d runs filled in %s", pruneJobs*pruneRowsPerJob, time.Since(start).Round(time.Second))
	for round := range 3 {
		for _, prune := range []bool{false, true} {
			c := fireCase{Runner: "scheduler", Store: "postgres", DSN: dsn, Jobs: pruneJobs, Spec: "*/10 * * * * *",
				Period: 10, Herds: 3, Batch: true, Prune: prune}
			b.Run(fmt.Sprintf("jobs=%d/ledger=10M/prune=%v/round=%d", pruneJobs, prune, round+1), func(b *testing.B) {
				var res []fireResult
				pruned := 0
				for range b.N {
					r := child(b, c)
					pruned += r.Pruned
					res = append(res, r)
				}
				report(b, res)
				b.ReportMetric(float64(pruned)/float64(len(res)), "pruned-runs")
			})
		}
	}
}

// fillPruneLedger migrates the store at dsn and inserts the finished runs with generate_series,
// a hundred jobs per statement, then vacuums and analyzes the table.
func fillPruneLedger(b *testing.B, dsn string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	s, err := fence.Open(ctx, fence.Config{DSN: dsn}, nil)
	if err != nil {
		b.Fatal(err)
	}
	err = s.Migrate(ctx)
	s.Close()
	if err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	for j := 0; j < pruneJobs; j += 100 {
		if _, err := conn.Exec(ctx, `INSERT INTO scheduler.runs
			(job, scheduled_at, status, token, node, attempt, started_at, finished_at)
			SELECT 'job' || j, t.at, 'succeeded', 1, 'filler', 1, t.at, t.at + interval '1 second'
			FROM generate_series($1::int, $2::int) AS j, generate_series(1, $3::int) AS k,
				LATERAL (SELECT date_trunc('hour', now()) - interval '1 day' - k * interval '1 hour' AS at) AS t
			ORDER BY j, k`, j, j+99, pruneRowsPerJob); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) scheduler.runs`); err != nil {
		b.Fatal(err)
	}
}

// startPruner runs the retention pruner over the case's table with the daemon's defaults, when
// the case asks for it, until the returned function is called; that function returns the runs
// it deleted.
func startPruner(ctx context.Context, c fireCase, store *fence.Store) func() int {
	if !c.Prune {
		return func() int { return 0 }
	}
	policies := make([]retention.Policy, c.Jobs)
	for i := range policies {
		policies[i] = retention.Policy{Job: "job" + strconv.Itoa(i), MaxAge: 2160 * time.Hour, MaxRuns: 10000, Catchup: time.Minute}
	}
	var pruned atomic.Int64
	p, err := retention.New(retention.Config{
		Ledger: store, Policies: func() []retention.Policy { return policies },
		Interval: time.Second, Pruned: func(_ string, n int) { pruned.Add(int64(n)) },
	})
	if err != nil {
		panic(err) // a constant configuration
	}
	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(pctx, 1) })
	return func() int {
		cancel()
		wg.Wait()
		return int(pruned.Load())
	}
}
