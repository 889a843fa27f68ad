package backfills

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/control"
	"scheduler/internal/jobs"
	"scheduler/internal/retention"
	"scheduler/internal/schedule"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// countingState counts the reads of the requests, so that a test can wait for polls without
// a clock.
type countingState struct {
	State
	reads atomic.Int64
}

func (c *countingState) Backfills(ctx context.Context) ([]control.Backfill, error) {
	defer c.reads.Add(1)
	return c.State.Backfills(ctx)
}

// tableRunner is a runner of a one-job table that records the slots it is asked to run.
type tableRunner struct {
	table []jobs.Spec
	mu    sync.Mutex
	ran   []scheduler.SlotKey
}

func (r *tableRunner) Table() []jobs.Spec { return r.table }

func (r *tableRunner) Backfill(_ context.Context, slot scheduler.SlotKey) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ran = append(r.ran, slot)
	return nil
}

// noRuns is a ledger without runs.
type noRuns struct{}

func (noRuns) BackfillRuns(context.Context, string, int64) ([]scheduler.Run, error) { return nil, nil }
func (noRuns) SlotRuns(context.Context, string, time.Time, time.Time) ([]scheduler.Run, error) {
	return nil, nil
}
func (noRuns) Running(context.Context, string) ([]scheduler.Run, error) { return nil, nil }

// servePrefix is the election prefix of the requests TestLeader_Serve writes.
const servePrefix = "/test/election"

// serveFixture returns a context for one case, a client of a fresh etcd, the control state on
// it under servePrefix, and the schedule of the table's one job.
func serveFixture(t *testing.T) (context.Context, *clientv3.Client, *control.Store, *schedule.Schedule) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cli := testenv.MustEtcd(t).Client(t)
	st, err := control.New(cli, servePrefix)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schedule.Parse("@yearly", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, cli, st, sch
}

// TestLeader_Serve: requests written into etcd by hand are checked as `scheduler backfill`
// checks them, retention included, and each refusal is recorded once on the key it was read
// from, however that key spells the id; a value that does not parse is logged once.
func TestLeader_Serve(t *testing.T) {
	t.Run("RefusesHandWrittenRequestsOnceOnTheirKeys", func(t *testing.T) {
		ctx, cli, st, sch := serveFixture(t)
		refused := map[string]string{ // key -> what its refusal says
			servePrefix + ":backfill/yearly/4":    `overlap "bogus"`,
			servePrefix + ":backfill/nosuchjob/5": "no such job",
			servePrefix + ":backfill/yearly/2":    "no range",
			servePrefix + ":backfill/yearly/09":   "history.max_age",
			servePrefix + ":backfill/yearly/10":   "no range",
		}
		values := map[string]string{
			servePrefix + ":backfill/yearly/4":    `{"from":"2020-01-01T00:00:00Z","to":"2024-12-31T00:00:00Z","overlap":"bogus"}`,
			servePrefix + ":backfill/nosuchjob/5": `{"from":"2020-01-01T00:00:00Z","to":"2024-12-31T00:00:00Z"}`,
			servePrefix + ":backfill/yearly/2":    `{"from":"0001-01-01T00:00:00Z","to":"9999-01-01T00:00:00Z"}`,
			servePrefix + ":backfill/yearly/09":   `{"from":"2020-01-01T00:00:00Z","to":"2021-06-01T00:00:00Z"}`,
			servePrefix + ":backfill/yearly/10":   `{"to":"2021-06-01T00:00:00Z"}`,
			servePrefix + ":backfill/yearly/1":    `[]`,
		}
		for k, v := range values {
			if _, err := cli.Put(ctx, k, v); err != nil {
				t.Fatal(err)
			}
		}
		core, logs := observer.New(zap.InfoLevel)
		state := &countingState{State: st}
		runner := &tableRunner{table: []jobs.Spec{{Name: "yearly", Schedule: sch, Overlap: jobs.OverlapSkip}}}
		now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
		l := Leader{State: state, Runner: runner, Ledger: noRuns{}, Node: "n1", Logger: zap.New(core),
			Poll: time.Millisecond, Now: func() time.Time { return now },
			Retention: func() []retention.Policy { return []retention.Policy{{Job: "yearly", MaxAge: 365 * 24 * time.Hour}} }}
		sctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); l.Serve(sctx) }()
		defer func() { stop(); <-done }()

		stored := func() map[string]control.Backfill {
			resp, err := cli.Get(ctx, servePrefix+":backfill/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]control.Backfill{}
			for _, kv := range resp.Kvs {
				var b control.Backfill
				_ = json.Unmarshal(kv.Value, &b)
				m[string(kv.Key)] = b
			}
			return m
		}
		testenv.Eventually(t, 30*time.Second, 10*time.Millisecond, "every request refused", func() bool {
			m := stored()
			for k := range refused {
				if m[k].State != control.BackfillRefused {
					return false
				}
			}
			return true
		})
		// Polls after the refusals: none of them may serve a request again.
		after := state.reads.Load()
		testenv.Eventually(t, 30*time.Second, time.Millisecond, "more polls", func() bool { return state.reads.Load() > after+5 })
		stop()
		<-done

		m := stored()
		if len(m) != len(values) {
			t.Errorf("%d keys under the backfill prefix, want the %d written: %v", len(m), len(values), m)
		}
		for k, want := range refused {
			if !strings.Contains(m[k].Error, want) {
				t.Errorf("%s refused with %q, want one saying %q", k, m[k].Error, want)
			}
		}
		if n := logs.FilterMessage("backfill refused").Len(); n != len(refused) {
			t.Errorf("%d refusals logged, want %d (one per request)", n, len(refused))
		}
		bad := logs.FilterMessage("ignoring backfill request").All()
		if len(bad) != 1 || !strings.Contains(bad[0].ContextMap()["reason"].(string), servePrefix+":backfill/yearly/1") {
			t.Errorf("unreadable requests logged %v, want one line naming yearly/1", bad)
		}
		if len(runner.ran) != 0 {
			t.Errorf("ran %v, want nothing", runner.ran)
		}
	})
	// A running request whose slots have all aged past history.max_age is refused, saying so,
	// instead of ending done with nothing run and its counts gone.
	t.Run("RunningRequestAllAged", func(t *testing.T) {
		runner, read := serveRunning(t, 4, `"from":"2020-01-01T00:00:00Z","to":"2021-06-01T00:00:00Z","total":2,"done":1,"succeeded":1`)
		testenv.Eventually(t, 30*time.Second, 10*time.Millisecond, "the request refused", func() bool {
			b, ok := read()
			if !ok {
				return false
			}
			if b.State == control.BackfillDone {
				t.Fatalf("the request ended done: %+v", b)
			}
			return b.State == control.BackfillRefused && strings.Contains(b.Error, "aged past")
		})
		runner.mu.Lock()
		defer runner.mu.Unlock()
		if len(runner.ran) != 0 {
			t.Fatalf("ran %v, want nothing", runner.ran)
		}
	})
	// A request a leader started when its slots were within retention is carried on by the next
	// leader without the slots that have aged past it since (their runs may have been pruned,
	// and they would run again), as is one written by hand as running, which no one checked:
	// before, it ran every slot, those older than history.max_age included.
	t.Run("CarriesOnARunningRequest", func(t *testing.T) {
		runner, read := serveRunning(t, 3, `"from":"2020-01-01T00:00:00Z","to":"2026-02-01T00:00:00Z","total":7`)
		testenv.Eventually(t, 30*time.Second, 10*time.Millisecond, "the request carried on", func() bool {
			b, ok := read()
			if !ok {
				return false
			}
			if b.State == control.BackfillRefused {
				t.Fatalf("the running request was refused: %s", b.Error)
			}
			runner.mu.Lock()
			defer runner.mu.Unlock()
			return len(runner.ran) > 0 // its first slot handed to the runner
		})
		runner.mu.Lock()
		defer runner.mu.Unlock()
		for _, k := range runner.ran {
			if !k.At.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
				t.Fatalf("ran the slot %s, older than history.max_age; want 2026-01-01 alone", k.At)
			}
		}
	})
}

// serveRunning writes request id of job yearly (its fields after the job and id: the range and
// counts) as running, as a leader left it or someone wrote it, and serves it on 2026-06-01 with a
// history.max_age of a year until the test ends. It returns the runner and a read of the request.
func serveRunning(t *testing.T, id int, fields string) (*tableRunner, func() (control.Backfill, bool)) {
	t.Helper()
	ctx, cli, st, sch := serveFixture(t)
	key := fmt.Sprintf("%s:backfill/yearly/%020d", servePrefix, id)
	if _, err := cli.Put(ctx, key, fmt.Sprintf(`{"job":"yearly","id":%d,"state":"running",%s}`, id, fields)); err != nil {
		t.Fatal(err)
	}
	runner := &tableRunner{table: []jobs.Spec{{Name: "yearly", Schedule: sch, Overlap: jobs.OverlapSkip}}}
	l := Leader{State: st, Runner: runner, Ledger: noRuns{}, Node: "n1", Logger: zap.NewNop(), Poll: time.Millisecond,
		Now:       func() time.Time { return time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) },
		Retention: func() []retention.Policy { return []retention.Policy{{Job: "yearly", MaxAge: 365 * 24 * time.Hour}} }}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); l.Serve(sctx) }()
	t.Cleanup(func() { stop(); <-done })
	return runner, func() (control.Backfill, bool) {
		resp, err := cli.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			return control.Backfill{}, false
		}
		var b control.Backfill
		return b, json.Unmarshal(resp.Kvs[0].Value, &b) == nil
	}
}
