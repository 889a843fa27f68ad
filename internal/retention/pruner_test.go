package retention

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
)

// fakeLedger answers each delete of a job from a queue of counts (then 0), and records the
// batches it was asked for.
type fakeLedger struct {
	mu      sync.Mutex
	counts  map[string][]int
	errs    map[string]error
	batches []scheduler.Retention
}

func (f *fakeLedger) Prune(_ context.Context, _ int64, b scheduler.Retention) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, b)
	if err := f.errs[b.Job]; err != nil {
		return 0, err
	}
	q := f.counts[b.Job]
	if len(q) == 0 {
		return 0, nil
	}
	f.counts[b.Job] = q[1:]
	return q[0], nil
}

func (f *fakeLedger) jobs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var js []string
	for _, b := range f.batches {
		js = append(js, b.Job)
	}
	return js
}

func mustPruner(t *testing.T, cfg Config) *Pruner {
	t.Helper()
	cfg.Logger = zaptest.NewLogger(t)
	if cfg.Pause == 0 {
		cfg.Pause = time.Nanosecond
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPruner_Pass(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	policies := []Policy{
		{Job: "a", MaxAge: 48 * time.Hour, MaxRuns: 100, Catchup: time.Hour},
		{Job: "unbounded"},
		{Job: "b", MaxRuns: 10, Catchup: 6 * time.Hour},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("BatchesUntilShortAndCounts", func(t *testing.T) {
		led := &fakeLedger{counts: map[string][]int{"a": {3, 3, 1}, "b": {2}}}
		pruned := map[string]int{}
		p := mustPruner(t, Config{Ledger: led, Policies: func() []Policy { return policies }, Batch: 3, Now: clock,
			Pruned: func(job string, n int) { pruned[job] += n }})
		n, err := p.Pass(ctx, 7)
		if err != nil || n != 9 {
			t.Fatalf("pass = %d, %v; want 9 rows", n, err)
		}
		if got, want := led.jobs(), []string{"a", "a", "a", "b"}; !slices.Equal(got, want) {
			t.Fatalf("deletes of %v, want %v (none for the job without limits)", got, want)
		}
		if pruned["a"] != 7 || pruned["b"] != 2 {
			t.Fatalf("pruned %v, want a:7 b:2", pruned)
		}
		a, b := led.batches[0], led.batches[3]
		if want := (scheduler.Retention{Job: "a", Before: now.Add(-48 * time.Hour), Keep: 100, Protect: now.Add(-time.Hour), Limit: 3}); a != want {
			t.Fatalf("batch of a = %+v, want %+v", a, want)
		}
		if want := (scheduler.Retention{Job: "b", Keep: 10, Protect: now.Add(-6 * time.Hour), Limit: 3}); b != want {
			t.Fatalf("batch of b = %+v, want %+v (no age limit)", b, want)
		}
	})
	t.Run("FencedEndsThePass", func(t *testing.T) {
		led := &fakeLedger{errs: map[string]error{"a": scheduler.ErrFenced}}
		p := mustPruner(t, Config{Ledger: led, Policies: func() []Policy { return policies }, Now: clock})
		if _, err := p.Pass(ctx, 7); !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("pass: err %v, want ErrFenced", err)
		}
		if got := led.jobs(); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("deletes of %v after a fenced one, want none", got)
		}
	})
	t.Run("OtherErrorsSkipTheJob", func(t *testing.T) {
		led := &fakeLedger{errs: map[string]error{"a": errors.New("connection reset")}, counts: map[string][]int{"b": {4}}}
		p := mustPruner(t, Config{Ledger: led, Policies: func() []Policy { return policies }, Now: clock})
		n, err := p.Pass(ctx, 7)
		if err != nil || n != 4 {
			t.Fatalf("pass = %d, %v; want job b pruned after a's error", n, err)
		}
	})
	// A store that does not answer: one line for the pass, naming how many jobs failed, not a
	// line per job (a thousand lines a pass at a thousand jobs).
	t.Run("OneLineAPassForAStoreAway", func(t *testing.T) {
		down := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
		many := make([]Policy, 50)
		errs := map[string]error{}
		for i := range many {
			many[i] = Policy{Job: fmt.Sprintf("j%02d", i), MaxRuns: 10}
			errs[many[i].Job] = down
		}
		core, logs := observer.New(zapcore.WarnLevel)
		p := mustPruner(t, Config{Ledger: &fakeLedger{errs: errs}, Policies: func() []Policy { return many }, Now: clock})
		p.lg = zap.New(core)
		if _, err := p.Pass(ctx, 7); err != nil {
			t.Fatalf("pass: %v", err)
		}
		lines := logs.FilterMessage("prune failed").All()
		if len(lines) != 1 || lines[0].ContextMap()["jobs"] != int64(50) || lines[0].ContextMap()["job"] != "j00" {
			t.Fatalf("%d prune failure lines (%v), want one naming 50 jobs and the first", len(lines), lines)
		}
	})
}

func TestPruner_Run(t *testing.T) {
	t.Run("StopsWithTheTerm", func(t *testing.T) {
		led := &fakeLedger{counts: map[string][]int{}}
		p := mustPruner(t, Config{Ledger: led, Policies: func() []Policy { return []Policy{{Job: "a", MaxRuns: 1}} },
			Interval: time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx, 3) }()
		deadline := time.After(10 * time.Second)
		for len(led.jobs()) < 2 {
			select {
			case <-deadline:
				t.Fatal("no second pass")
			case <-time.After(time.Millisecond):
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run = %v, want nil when the term ends", err)
		}
	})
	t.Run("ReturnsWhenFenced", func(t *testing.T) {
		led := &fakeLedger{errs: map[string]error{"a": scheduler.ErrFenced}}
		p := mustPruner(t, Config{Ledger: led, Policies: func() []Policy { return []Policy{{Job: "a", MaxRuns: 1}} },
			Interval: time.Millisecond})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Run(ctx, 3); !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("run = %v, want ErrFenced", err)
		}
	})
}

func TestNew(t *testing.T) {
	pols := func() []Policy { return nil }
	for name, cfg := range map[string]Config{
		"NoLedger":      {Policies: pols},
		"NoPolicies":    {Ledger: &fakeLedger{}},
		"NegativeBatch": {Ledger: &fakeLedger{}, Policies: pols, Batch: -1},
		"NegativePause": {Ledger: &fakeLedger{}, Policies: pols, Pause: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
