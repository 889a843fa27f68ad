// Package fire measures fire precision at scale: n jobs all due at the same instant (the 02:00
// herd), the delay from each slot to the moment its executor starts, ledger claim included, and
// the scheduler's CPU and resident memory. robfig/cron's own Cron runner with the same table and
// no ledger at all runs beside it in the same run.
//
// Each case runs in a child process of its own (the test binary run again), so that its CPU time
// and peak resident memory are its alone:
//
//	go test -run '^$' -bench Fire -benchtime 1x -count 2 -timeout 90m ./bench/fire/
//
// Cases: runner=robfig (no ledger), runner=scheduler with the ledger on SQLite and on Postgres
// (a dedicated cluster with default settings), jobs=1000, 10000, 100000. Every job's schedule is
// "*/10 * * * * *": a herd every 10 s (every 30 s for SQLite at 100,000 jobs). Each child lets
// one herd pass as a warm-up and then measures the next three (two). robfig also runs
// "* * * * * *" (every entry every second), the load of the figures quoted for it. From 10,000
// jobs the scheduler on Postgres also runs with GOMEMLIMIT=100MiB in its environment, the soft
// memory limit an operator sets to hold the daemon to a memory budget.
package fire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"scheduler/internal/testenv"
)

// childEnv carries a case's JSON to a child process.
const childEnv = "SCHEDULER_BENCH_FIRE_CASE"

// memLimit is the soft memory limit of the cases that run with one: the memory target at
// 100,000 jobs.
const memLimit = "100MiB"

func TestMain(m *testing.M) {
	if c := os.Getenv(childEnv); c != "" {
		os.Exit(runChild(c))
	}
	testenv.Main(m)
}

// fireCase is what one child process measures.
type fireCase struct {
	Runner string `json:"runner"` // "scheduler" or "robfig"
	Store  string `json:"store"`  // "postgres", "sqlite"; "" for robfig
	DSN    string `json:"dsn,omitempty"`
	Path   string `json:"path,omitempty"`
	Jobs   int    `json:"jobs"`
	Spec   string `json:"spec"`   // every job's schedule
	Period int    `json:"period"` // seconds between herds
	Herds  int    `json:"herds"`  // herds measured, after one warm-up herd
	// ClaimAhead is the runner's ClaimAhead option; negative claims at fire time.
	ClaimAhead string `json:"claim_ahead,omitempty"`
	Batch      bool   `json:"batch"` // complete runs with CompleteMany
	// MemLimit is the child's GOMEMLIMIT (the Go runtime's soft memory limit), as an operator
	// sets it in the service's environment; empty leaves the runtime's default (none).
	MemLimit string `json:"mem_limit,omitempty"`
	// Prune runs the leader's ledger pruner beside the runner, with the daemon's defaults.
	Prune bool `json:"prune,omitempty"`
}

// fireResult is what a child reports on its last line of output.
type fireResult struct {
	Fires    int       `json:"fires"`
	P50      float64   `json:"p50_ms"`
	P99      float64   `json:"p99_ms"`
	Max      float64   `json:"max_ms"`
	HerdP99  []float64 `json:"herd_p99_ms"`
	CPU      float64   `json:"cpu_us_per_fire"`
	RSS      float64   `json:"rss_peak_mb"`
	Late     int       `json:"late"`    // runs whose outcome was not written when the next herd was due
	Missing  int       `json:"missing"` // runs of the measured herds that did not start by the end
	Takeover float64   `json:"takeover_s"`
	HeapMB   float64   `json:"heap_inuse_mb"` // at the end of the last herd
	StackMB  float64   `json:"stack_sys_mb"`  // stacks held from the runtime, the most ever needed
	SysMB    float64   `json:"sys_mb"`
	Pruned   int       `json:"pruned"` // runs the pruner deleted during the case
	// LiveMB, StacksMB and Goroutines are the highest live heap (as the collector last marked
	// it), goroutine stacks in use and goroutine count sampled through the measured herds.
	LiveMB     float64 `json:"live_peak_mb"`
	StacksMB   float64 `json:"stacks_peak_mb"`
	Goroutines int     `json:"goroutines_peak"`
}

func BenchmarkFire(b *testing.B) {
	pg := testenv.MustPostgres(b)
	for _, n := range []int{1000, 10000, 100000} {
		cases := []fireCase{
			{Runner: "robfig", Spec: "* * * * * *", Period: 1, Herds: 5},
			{Runner: "robfig", Spec: "*/10 * * * * *", Period: 10, Herds: 3},
			{Runner: "scheduler", Store: "sqlite", Spec: "*/10 * * * * *", Period: 10, Herds: 3, Batch: true},
			{Runner: "scheduler", Store: "postgres", Spec: "*/10 * * * * *", Period: 10, Herds: 3, Batch: true},
			{Runner: "scheduler", Store: "postgres", Spec: "*/10 * * * * *", Period: 10, Herds: 3, ClaimAhead: "-1s"},
		}
		if n >= 10000 {
			cases = append(cases, fireCase{Runner: "scheduler", Store: "postgres", Spec: "*/10 * * * * *", Period: 10, Herds: 3, Batch: true, MemLimit: memLimit})
		}
		for _, c := range cases {
			c.Jobs = n
			if n >= 100000 && c.Store == "sqlite" {
				// SQLite claims about ten thousand slots a second: a herd every 30 s.
				c.Spec, c.Period, c.Herds = "*/30 * * * * *", 30, 2
			}
			name := fmt.Sprintf("jobs=%d/runner=%s", n, c.Runner)
			switch {
			case c.Runner == "robfig":
				name += "/every=" + fmt.Sprint(c.Period) + "s"
			case c.ClaimAhead != "":
				name += "/store=" + c.Store + "/claim=at-fire/complete=single"
			case c.MemLimit != "":
				name += "/store=" + c.Store + "/claim=ahead/complete=batched/gomemlimit=" + c.MemLimit
			default:
				name += "/store=" + c.Store + "/claim=ahead/complete=batched"
			}
			b.Run(name, func(b *testing.B) {
				var res []fireResult
				for range b.N {
					switch c.Store {
					case "postgres":
						c.DSN = pg.CreateDatabase(b)
					case "sqlite":
						c.Path = filepath.Join(b.TempDir(), "scheduler.db")
					}
					res = append(res, child(b, c))
				}
				report(b, res)
			})
		}
	}
}

// child runs c in a child process and returns its result.
func child(b *testing.B, c fireCase) fireResult {
	b.Helper()
	js, err := json.Marshal(c)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	if c.MemLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+c.MemLimit)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		b.Fatalf("case %s: %v\n%s", js, err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var r fireResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		b.Fatalf("case %s: result %q: %v\n%s", js, out.String(), err, errOut.String())
	}
	return r
}

// report averages the children's results into the benchmark's metrics (with -benchtime 1x
// there is one child per run, and -count gives the spread).
func report(b *testing.B, res []fireResult) {
	var sum fireResult
	for _, r := range res {
		sum.P50 += r.P50
		sum.P99 += r.P99
		sum.Max = max(sum.Max, r.Max)
		sum.CPU += r.CPU
		sum.RSS = max(sum.RSS, r.RSS)
		sum.Late += r.Late
		sum.Missing += r.Missing
		sum.Takeover += r.Takeover
		sum.HeapMB = max(sum.HeapMB, r.HeapMB)
		sum.StackMB = max(sum.StackMB, r.StackMB)
		sum.LiveMB = max(sum.LiveMB, r.LiveMB)
		sum.StacksMB = max(sum.StacksMB, r.StacksMB)
		sum.Goroutines = max(sum.Goroutines, r.Goroutines)
	}
	k := float64(len(res))
	b.ReportMetric(sum.P50/k, "p50-ms")
	b.ReportMetric(sum.P99/k, "p99-ms")
	b.ReportMetric(sum.Max, "max-ms")
	b.ReportMetric(sum.CPU/k, "cpu-µs/fire")
	b.ReportMetric(sum.RSS, "rss-MB")
	b.ReportMetric(float64(sum.Late), "late")
	b.ReportMetric(float64(sum.Missing), "not-started")
	b.ReportMetric(sum.Takeover/k, "takeover-s")
	b.ReportMetric(sum.HeapMB, "heap-MB")
	b.ReportMetric(sum.StackMB, "stack-MB")
	b.ReportMetric(sum.LiveMB, "live-peak-MB")
	b.ReportMetric(sum.StacksMB, "stacks-peak-MB")
	b.ReportMetric(float64(sum.Goroutines), "goroutines-peak")
	b.ReportMetric(0, "ns/op")
}
