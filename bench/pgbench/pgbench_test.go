// Package pgbench measures fenced writes as scripts write them: pgbench runs the README's script
// pattern and the same transaction without the fence check, like for like, against a Postgres
// cluster of its own with default settings (fsync and synchronous commit on), migrated by the
// store, with the fence of the job raised as a leader raises it at takeover and the writes made
// under a role set up by the README's job-role recipe:
//
//	go test -run '^$' -bench Pgbench -benchtime 1x -timeout 30m ./bench/pgbench/
//
// One script per variant, each a transaction that inserts one row, sent by pgbench's simple
// protocol (-M simple: one message per command, as psql sends a script):
//
//	plain.sql               (a) BEGIN; INSERT; COMMIT, a statement per round trip
//	plain_select1.sql       (b) (a) with a SELECT 1 round trip where (c) checks the fence
//	fenced.sql              (c) BEGIN; SELECT scheduler.fence_verify(...); INSERT; COMMIT
//	fenced_one_message.sql  (d) (c) sent as one multi-statement message (\; between statements)
//	plain_one_message.sql   (e) (a) sent as one message, the baseline of (d)
//	plain_two_selects.sql   (f) (e) with two SELECTs of a constant: the check's statements, empty
//	plain_lock.sql          (g) (f) with the first taking the job's shared advisory lock
//	plain_row_read.sql      (h) (f) with the second reading one row by its primary key
//
// (f) to (h) check nothing: they take the check of (d) apart, to show what its cost is made of.
//
// Every variant runs for a fixed time (-duration, 3 s) at 1, 4 and 16 clients; within each
// round and client count the variants take turns in an order that rotates from round to round,
// and the rounds (-rounds, 10) repeat the whole, so that background load falls on every variant
// alike and its spread shows. Other values go after -args:
//
//	go test -run '^$' -bench Pgbench -benchtime 1x ./bench/pgbench/ -args -duration 10s -rounds 3
//
// The report gives each variant's tps and mean latency (median of the rounds, min–max) and the
// ratios of the pairings c/a, c/b, d/e, d/a, f/e, g/e and h/e, each computed within a round and
// client count.
package pgbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"scheduler/internal/fence"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The defaults keep a run to about thirteen minutes: short slices, many rounds, so that the
// ratios of slices run close together outlast changes in the machine's load and disk.
var (
	duration = flag.Duration("duration", 3*time.Second, "how long pgbench runs each variant at each client count (whole seconds)")
	rounds   = flag.Int("rounds", 10, "how often every variant runs at every client count")
)

const (
	// job is the job whose fence the scripts check.
	job = "bench"
	// token is the fence of job, the token a current run of it holds.
	token = 7
	// setupTimeout bounds preparing a database.
	setupTimeout = time.Minute
)

// variant is one pgbench script.
type variant struct {
	key    string // the letter the report uses
	script string // file name in this directory
	// messages is how many messages a transaction of the script sends.
	messages int
	// fenced reports whether the script checks the fence, and so refuses a stale token.
	fenced bool
}

// variants are the scripts, like for like.
var variants = []variant{
	{key: "a", script: "plain.sql", messages: 3},
	{key: "b", script: "plain_select1.sql", messages: 4},
	{key: "c", script: "fenced.sql", messages: 4, fenced: true},
	{key: "d", script: "fenced_one_message.sql", messages: 1, fenced: true},
	{key: "e", script: "plain_one_message.sql", messages: 1},
	{key: "f", script: "plain_two_selects.sql", messages: 1},
	{key: "g", script: "plain_lock.sql", messages: 1},
	{key: "h", script: "plain_row_read.sql", messages: 1},
}

// pairings are the ratios the report gives: fenced over its plain counterpart, then each
// stand-in over the plain one-message baseline.
var pairings = [][2]string{{"c", "a"}, {"c", "b"}, {"d", "e"}, {"d", "a"}, {"f", "e"}, {"g", "e"}, {"h", "e"}}

// clientCounts are the numbers of concurrent writers.
var clientCounts = []int{1, 4, 16}

// jobRoleGrants is the README's job-role recipe for the scripts' role, with {role} for it.
var jobRoleGrants = []string{
	`GRANT USAGE ON SCHEMA scheduler TO {role}`,
	`GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO {role}`,
	`GRANT INSERT ON public.bench_rows TO {role}`,
	// Beyond the recipe: the read of (h), a stand-in's, on the table the scripts write.
	`GRANT SELECT ON public.bench_rows TO {role}`,
}

// prepare migrates the store on the database of dsn, raises the fence of job to token as a
// leader does at takeover, creates the table the scripts write, and returns the DSN of a role
// set up by the job-role recipe.
func prepare(tb testing.TB, dsn string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	s, err := fence.Open(ctx, fence.Config{DSN: dsn}, zap.NewNop())
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	if err := s.RaiseAll(ctx, []string{job}, token); err != nil {
		tb.Fatalf("raise fence of %s to %d: %v", job, token, err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, `CREATE TABLE public.bench_rows (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		job text NOT NULL, token bigint NOT NULL, n bigint NOT NULL)`); err != nil {
		tb.Fatalf("create bench_rows: %v", err)
	}
	return testenv.MustRole(tb, dsn, "bench_job", jobRoleGrants...)
}

// countRows returns the number of rows the scripts wrote.
func countRows(tb testing.TB, dsn string) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM public.bench_rows`).Scan(&n); err != nil {
		tb.Fatalf("count bench_rows: %v", err)
	}
	return n
}

// pgbenchPath returns the pgbench program: on PATH, else beside the newest server's binaries.
func pgbenchPath(tb testing.TB) string {
	tb.Helper()
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	sort.Strings(found)
	if len(found) == 0 {
		tb.Fatalf("pgbench not found on PATH or in /usr/lib/postgresql/*/bin; install it with: apt-get install -y postgresql-contrib (or postgresql)")
	}
	return found[len(found)-1]
}

// result is what one pgbench run reports.
type result struct {
	tps       float64 // transactions per second, without the connection time
	latencyMS float64 // mean latency of a transaction
	processed int64   // transactions done
	failed    int64   // transactions failed
}

var (
	reTPS       = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)
	reLatency   = regexp.MustCompile(`(?m)^latency average = ([0-9.]+) ms`)
	reProcessed = regexp.MustCompile(`(?m)^number of transactions actually processed: ([0-9]+)`)
	reFailed    = regexp.MustCompile(`(?m)^number of failed transactions: ([0-9]+)`)
)

// errAborted is pgbench ending with an error: a client's transaction failed (a stale token
// refused by fence_verify) or the run could not start.
var errAborted = errors.New("pgbench aborted")

// runPgbench runs script with pgbench's simple protocol at token as the fence token, with
// clients connections for d (whole seconds), or for txs transactions per client when txs > 0.
func runPgbench(ctx context.Context, tb testing.TB, dsn, script string, tok int64, clients int, d time.Duration, txs int) (result, string, error) {
	tb.Helper()
	threads := min(clients, 2)
	args := []string{"-n", "-M", "simple", "-f", script, "-D", "token=" + strconv.FormatInt(tok, 10),
		"-c", strconv.Itoa(clients), "-j", strconv.Itoa(threads)}
	if txs > 0 {
		args = append(args, "-t", strconv.Itoa(txs))
	} else {
		args = append(args, "-T", strconv.Itoa(int(d.Round(time.Second)/time.Second)))
	}
	cmd := exec.CommandContext(ctx, pgbenchPath(tb), append(args, dsn)...)
	// Keep the caller's PG* variables from choosing another server or user.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return result{}, out, fmt.Errorf("%s at %d clients: %w (exit %d)", script, clients, errAborted, ee.ExitCode())
	}
	if err != nil {
		return result{}, out, fmt.Errorf("run pgbench %s: %w", script, err)
	}
	var r result
	for _, f := range []struct {
		re  *regexp.Regexp
		set func(string) error
	}{
		{reTPS, func(s string) (err error) { r.tps, err = strconv.ParseFloat(s, 64); return }},
		{reLatency, func(s string) (err error) { r.latencyMS, err = strconv.ParseFloat(s, 64); return }},
		{reProcessed, func(s string) (err error) { r.processed, err = strconv.ParseInt(s, 10, 64); return }},
		{reFailed, func(s string) (err error) { r.failed, err = strconv.ParseInt(s, 10, 64); return }},
	} {
		m := f.re.FindStringSubmatch(out)
		if m == nil {
			return result{}, out, fmt.Errorf("pgbench %s: no %q in its output", script, f.re)
		}
		if err := f.set(m[1]); err != nil {
			return result{}, out, fmt.Errorf("pgbench %s: %q: %w", script, m[0], err)
		}
	}
	return r, out, nil
}

// BenchmarkPgbench runs every variant at every client count, in rotating turns, -rounds times,
// and reports each variant's tps and latency and the pairings' ratios.
func BenchmarkPgbench(b *testing.B) {
	if *duration < time.Second || *rounds < 1 {
		b.Fatalf("-duration %v, -rounds %d: want at least 1s and 1", *duration, *rounds)
	}
	pg := testenv.MustPostgres(b)
	dsn := pg.CreateDatabase(b)
	roleDSN := prepare(b, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Duration(*rounds*len(clientCounts)*len(variants))*(*duration+5*time.Second))
	defer cancel()

	// got[clients][key] holds one result per round, in round order.
	got := map[int]map[string][]result{}
	for _, c := range clientCounts {
		got[c] = map[string][]result{}
	}
	for range b.N {
		for round := range *rounds {
			for _, c := range clientCounts {
				for i := range variants {
					v := variants[(i+round)%len(variants)]
					r, out, err := runPgbench(ctx, b, roleDSN, v.script, token, c, *duration, 0)
					if err != nil {
						b.Fatalf("round %d: %v\n%s", round+1, err, out)
					}
					if r.failed != 0 {
						b.Fatalf("round %d: %s at %d clients: %d transactions failed\n%s", round+1, v.script, c, r.failed, out)
					}
					got[c][v.key] = append(got[c][v.key], r)
					fmt.Printf("pgbench: round %d clients %2d (%s) %-24s tps %8.0f  latency %6.3f ms\n",
						round+1, c, v.key, v.script, r.tps, r.latencyMS)
				}
			}
		}
	}
	report(b, got)
}

// report prints the table of BENCHMARKS.md and reports the pairings' median ratios as metrics.
func report(b *testing.B, got map[int]map[string][]result) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n| clients | variant | tps | latency (ms) |\n| --- | --- | --- | --- |\n")
	for _, c := range clientCounts {
		for _, v := range variants {
			rs := got[c][v.key]
			tps := make([]float64, len(rs))
			lat := make([]float64, len(rs))
			for i, r := range rs {
				tps[i], lat[i] = r.tps, r.latencyMS
			}
			fmt.Fprintf(&sb, "| %d | (%s) %s | %s | %s |\n", c, v.key, v.script, spread(tps, "%.0f"), spread(lat, "%.2f"))
		}
	}
	fmt.Fprintf(&sb, "\n| clients |")
	for _, p := range pairings {
		fmt.Fprintf(&sb, " %s/%s |", p[0], p[1])
	}
	fmt.Fprintf(&sb, "\n| --- |%s\n", strings.Repeat(" --- |", len(pairings)))
	for _, c := range clientCounts {
		fmt.Fprintf(&sb, "| %d |", c)
		for _, p := range pairings {
			num, den := got[c][p[0]], got[c][p[1]]
			ratios := make([]float64, len(num))
			for i := range num {
				ratios[i] = num[i].tps / den[i].tps
			}
			fmt.Fprintf(&sb, " %s |", spread(ratios, "%.2f"))
			b.ReportMetric(median(ratios), fmt.Sprintf("%s/%s@%d", p[0], p[1], c))
		}
		fmt.Fprintf(&sb, "\n")
	}
	fmt.Print(sb.String())
}

// spread formats the median of xs with its min–max.
func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return "–"
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return fmt.Sprintf(format+" ("+format+"–"+format+")", median(s), s[0], s[len(s)-1])
}

// median returns the median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
