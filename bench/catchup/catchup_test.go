// Package catchup measures a takeover: a new leader with up to 100,000 jobs and a one-hour catch-up
// window, from the call of Lead to the moment every fence is raised and every catch-up run
// started (the runner's "leading" line), on Postgres with default settings.
//
//	go test -run '^$' -bench Catchup -benchtime 1x -count 5 -timeout 30m ./bench/catchup/
//
// The ledger holds the hour before: every job runs every five minutes; the old leader (token 5)
// finished the slots up to 15 minutes ago, left the slot of 10 minutes ago running (an orphan),
// and was gone for the last two slots. With misfire "once" the new leader (token 9) takes each
// orphan over and runs it again (an interrupted slot is always finished), records one slot
// missed and runs the latest after it: per job one fence raised, one run taken over, one slot
// recorded, one claimed. Two ledgers are compared, both the store: as the daemon uses it (the
// window of every job in one query, orphans taken over with ReclaimMany and runs completed with
// CompleteMany, in batches of up to 1,000), and one at a time (one Window query per job, one
// Reclaim per orphan and one Complete per run), as before the store had batch operations, for
// comparison.
package catchup

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs"
	"scheduler/internal/schedule"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	oldToken = 5
	newToken = 9
	period   = 5 * time.Minute
)

func BenchmarkCatchup(b *testing.B) {
	pg := testenv.MustPostgres(b)
	for _, n := range []int{1000, 10000, 100000} {
		for _, variant := range []string{"one-at-a-time", "daemon"} {
			if n > 10000 && variant != "daemon" {
				continue // a call per item takes minutes a trial at this size
			}
			b.Run(fmt.Sprintf("jobs=%d/ledger=%s", n, variant), func(b *testing.B) {
				var total, raise time.Duration
				for range b.N {
					tk, rs := takeover(b, pg.CreateDatabase(b), n, variant == "daemon")
					total += tk
					raise += rs
				}
				b.ReportMetric(total.Seconds()*1000/float64(b.N), "takeover-ms")
				b.ReportMetric(raise.Seconds()*1000/float64(b.N), "raise-ms")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// takeover prepares the ledger on dsn and times one takeover; it returns the whole takeover and
// the part of it spent raising fences.
func takeover(b *testing.B, dsn string, n int, batched bool) (total, raise time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	store, err := fence.Open(ctx, fence.Config{DSN: dsn}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	base := now.Truncate(period)
	populate(b, ctx, dsn, n, base)

	timed := &timedLedger{Ledger: store}
	if !batched {
		timed.Ledger = oneAtATime{fencetest.Unbatched{Ledger: timed.Ledger}}
	}
	sched, err := schedule.Parse("*/5 * * * *", time.UTC)
	if err != nil {
		b.Fatal(err)
	}
	var started atomic.Int64
	allRan := make(chan struct{})
	exec := execFunc(func(_ context.Context, r scheduler.Attempt) (string, error) {
		if r.Slot.Equal(base) && started.Add(1) == int64(n) {
			close(allRan)
		}
		return "", nil
	})
	table := make([]jobs.Spec, n)
	for i := range table {
		table[i] = jobs.Spec{Name: jobName(i), Schedule: sched, Executor: exec, Timeout: time.Minute,
			Overlap: jobs.OverlapSkip, Misfire: jobs.MisfireOnce, Catchup: time.Hour, Enabled: true}
	}
	leading := make(chan time.Time, 1)
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	core := zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zapcore.InfoLevel)
	lg := zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == "leading" {
			leading <- time.Now()
		}
		return nil
	}))
	r, err := jobs.New(table, jobs.Options{Node: "new", Ledger: timed, Logger: lg})
	if err != nil {
		b.Fatal(err)
	}
	lctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- r.Lead(lctx, newToken) }()
	var end time.Time
	select {
	case end = <-leading:
	case err := <-done:
		b.Fatalf("Lead: %v", err)
	}
	select { // every catch-up run started
	case <-allRan:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d catch-up runs started a minute after the takeover (%s)", started.Load(), n, end.Sub(start))
	}
	b.Logf("jobs=%d batched=%v: takeover %s; time in the ledger: %s", n, batched, end.Sub(start), timed)
	stop()
	if err := <-done; err != nil {
		b.Fatalf("Lead: %v", err)
	}
	checkLedger(b, ctx, dsn, n, base)
	return end.Sub(start), timed.raise
}

func jobName(i int) string { return "job" + strconv.Itoa(i) }

// connect opens a connection to dsn for the benchmark's own reads and writes
// of the ledger, outside what it measures.
func connect(b *testing.B, ctx context.Context, dsn string) *pgx.Conn {
	b.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	return conn
}

// populate writes the hour before base, as the old leader left it.
func populate(b *testing.B, ctx context.Context, dsn string, n int, base time.Time) {
	b.Helper()
	conn := connect(b, ctx, dsn)
	defer func() { _ = conn.Close(ctx) }()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO scheduler.job_fence (job, token) SELECT 'job' || i, $2 FROM generate_series(0, $1 - 1) AS i`,
			[]any{n, oldToken}},
		{`INSERT INTO scheduler.runs (job, scheduled_at, status, token, node, attempt, started_at, finished_at)
			SELECT 'job' || i, $3::timestamptz - s * interval '5 minutes', 'succeeded', $2, 'old', 1,
				$3::timestamptz - s * interval '5 minutes', $3::timestamptz - s * interval '5 minutes' + interval '1 second'
			FROM generate_series(0, $1 - 1) AS i, generate_series(3, 12) AS s`,
			[]any{n, oldToken, base}},
		{`INSERT INTO scheduler.runs (job, scheduled_at, status, token, node, attempt, started_at)
			SELECT 'job' || i, $3::timestamptz - interval '10 minutes', 'running', $2, 'old', 1, $3::timestamptz - interval '10 minutes'
			FROM generate_series(0, $1 - 1) AS i`,
			[]any{n, oldToken, base}},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			b.Fatalf("populate: %v", err)
		}
	}
	if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}

// checkLedger verifies the takeover did what the benchmark says it does.
func checkLedger(b *testing.B, ctx context.Context, dsn string, n int, base time.Time) {
	b.Helper()
	conn := connect(b, ctx, dsn)
	defer func() { _ = conn.Close(ctx) }()
	var retaken, missed, ran, fenced int
	err := conn.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE scheduled_at = $1::timestamptz - interval '10 minutes' AND token = $2 AND attempt = 2),
			count(*) FILTER (WHERE scheduled_at = $1::timestamptz - interval '5 minutes' AND status = 'missed'),
			count(*) FILTER (WHERE scheduled_at = $1 AND token = $2),
			(SELECT count(*) FROM scheduler.job_fence WHERE token = $2)
		FROM scheduler.runs`, base, newToken).Scan(&retaken, &missed, &ran, &fenced)
	if err != nil {
		b.Fatal(err)
	}
	if retaken != n || missed != n || ran != n || fenced != n {
		b.Fatalf("after the takeover: %d orphans taken over, %d slots missed, %d run, %d fences raised; want %d each",
			retaken, missed, ran, fenced, n)
	}
}

type execFunc func(ctx context.Context, r scheduler.Attempt) (string, error)

func (f execFunc) Execute(ctx context.Context, r scheduler.Attempt) (string, error) { return f(ctx, r) }

// timedLedger measures the time spent in each ledger method.
type timedLedger struct {
	scheduler.Ledger
	mu        sync.Mutex
	raise     time.Duration // wall time raising fences
	raiseFrom time.Time
	spent     map[string]time.Duration // summed over concurrent calls
}

func (l *timedLedger) add(method string, start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.spent == nil {
		l.spent = map[string]time.Duration{}
	}
	l.spent[method] += time.Since(start)
}

func (l *timedLedger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for m, d := range l.spent {
		parts = append(parts, fmt.Sprintf("%s %s", m, d.Round(time.Millisecond)))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// RaiseAll records the span from the first raise to the end of the last (the runner raises a
// large table in parallel parts).
func (l *timedLedger) RaiseAll(ctx context.Context, names []string, token int64) error {
	start := time.Now()
	err := l.Ledger.RaiseAll(ctx, names, token)
	l.add("RaiseAll", start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.raiseFrom.IsZero() || start.Before(l.raiseFrom) {
		l.raiseFrom = start
	}
	l.raise = max(l.raise, time.Since(l.raiseFrom))
	return err
}

func (l *timedLedger) Window(ctx context.Context, names []string, from, to time.Time) ([]scheduler.Run, error) {
	defer l.add("Window", time.Now())
	return l.Ledger.Window(ctx, names, from, to)
}

func (l *timedLedger) LastScheduled(ctx context.Context, names ...string) (map[string]scheduler.Run, error) {
	defer l.add("Last", time.Now())
	return l.Ledger.LastScheduled(ctx, names...)
}

func (l *timedLedger) Orphans(ctx context.Context, names ...string) ([]scheduler.Run, error) {
	defer l.add("Orphans", time.Now())
	return l.Ledger.Orphans(ctx, names...)
}

func (l *timedLedger) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	defer l.add("ClaimMany", time.Now())
	return l.Ledger.ClaimMany(ctx, token, node, slots)
}

func (l *timedLedger) Reclaim(ctx context.Context, token int64, node string, slot scheduler.SlotKey) (scheduler.Run, error) {
	defer l.add("Reclaim", time.Now())
	return l.Ledger.Reclaim(ctx, token, node, slot)
}

func (l *timedLedger) RecordMany(ctx context.Context, token int64, node string, outs []scheduler.Outcome) ([]scheduler.Result, error) {
	defer l.add("RecordMany", time.Now())
	return l.Ledger.RecordMany(ctx, token, node, outs)
}

func (l *timedLedger) Complete(ctx context.Context, token int64, c scheduler.Completion) (scheduler.Run, error) {
	defer l.add("Complete", time.Now())
	return l.Ledger.Complete(ctx, token, c)
}

func (l *timedLedger) ReclaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	defer l.add("ReclaimMany", time.Now())
	return l.Ledger.ReclaimMany(ctx, token, node, slots)
}

func (l *timedLedger) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	defer l.add("CompleteMany", time.Now())
	return l.Ledger.CompleteMany(ctx, token, cs)
}

// oneAtATime is an Unbatched Ledger (ReclaimMany one Reclaim per orphan, CompleteMany one
// Complete per run) that also reads the window one job at a time.
type oneAtATime struct{ fencetest.Unbatched }

func (l oneAtATime) Window(ctx context.Context, names []string, from, to time.Time) ([]scheduler.Run, error) {
	var out []scheduler.Run
	for _, name := range names {
		runs, err := l.Ledger.Window(ctx, []string{name}, from, to)
		if err != nil {
			return nil, err
		}
		out = append(out, runs...)
	}
	return out, nil
}
