package triggers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"scheduler/internal/control"
	"scheduler/internal/jobs"
)

// runner answers each trigger with the error its job's answers give next (nil once they run out).
type runner struct {
	mu       sync.Mutex
	answers  map[string][]error
	triggers []string
}

func (r *runner) Trigger(_ context.Context, job string, _ time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.triggers = append(r.triggers, job)
	if a := r.answers[job]; len(a) > 0 {
		r.answers[job] = a[1:]
		return a[0]
	}
	return nil
}

// requests is the control state's requests in memory.
type requests struct {
	mu   sync.Mutex
	reqs []control.Request
	done chan string
}

func (s *requests) Requests(context.Context) ([]control.Request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]control.Request(nil), s.reqs...), nil
}

func (s *requests) Done(_ context.Context, r control.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.reqs {
		if q.Key == r.Key {
			s.reqs = append(s.reqs[:i], s.reqs[i+1:]...)
			break
		}
	}
	s.done <- r.Key
	return nil
}

func request(job string) control.Request {
	return control.Request{Job: job, At: time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC), Key: "/scheduler/trigger/" + job}
}

// errBlocked is how the runner answers for a job it holds back.
var errBlocked = errors.New(`trigger "x": job x is blocked: its fence is above the token`)

// TestHandle_KeepsWhatMayRunLater: a request is removed once the runner took it, or when its job
// is not in the table; kept when no term leads (for the next) or the job is held back.
func TestHandle_KeepsWhatMayRunLater(t *testing.T) {
	for _, c := range []struct {
		name    string
		answer  error
		removed bool
	}{
		{"Taken", nil, true},
		{"UnknownJob", fmt.Errorf("trigger %q: %w", "x", jobs.ErrUnknownJob), true},
		{"NotLeading", fmt.Errorf("trigger %q: %w", "x", jobs.ErrNotLeading), false},
		{"Blocked", errBlocked, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			reqs := &requests{reqs: []control.Request{request("x")}, done: make(chan string, 1)}
			h := &Handler{Runner: &runner{answers: map[string][]error{"x": {c.answer}}}, Requests: reqs, Log: zap.NewNop()}
			h.Handle(context.Background(), request("x"))
			if left, _ := reqs.Requests(context.Background()); (len(left) == 0) != c.removed {
				t.Fatalf("requests left %v, want removed %v", left, c.removed)
			}
		})
	}
}

// TestPending_HandsKeptRequestsAgain: a request kept for a job held back runs in the same term
// once the runner takes it, handed again every Retry; its reason is logged once as a warning,
// and a request taken at once is handed once.
func TestPending_HandsKeptRequestsAgain(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	run := &runner{answers: map[string][]error{"x": {errBlocked, errBlocked, errBlocked}}}
	reqs := &requests{reqs: []control.Request{request("x"), request("y")}, done: make(chan string, 2)}
	ticks := make(chan time.Time)
	var waits []time.Duration
	var mu sync.Mutex
	h := &Handler{Runner: run, Requests: reqs, Log: zap.New(core), Retry: 7 * time.Second,
		After: func(d time.Duration) <-chan time.Time {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return ticks
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Pending(ctx) }()

	if key := <-reqs.done; key != request("y").Key {
		t.Fatalf("first request removed: %s, want y's", key)
	}
	for range 3 {
		ticks <- time.Time{}
	}
	select {
	case key := <-reqs.done:
		if key != request("x").Key {
			t.Fatalf("removed %s, want x's", key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the kept request of x was never handed again")
	}
	cancel()
	<-done

	run.mu.Lock()
	defer run.mu.Unlock()
	if n := countOf(run.triggers, "x"); n != 4 {
		t.Errorf("x handed %d times, want 4 (three refusals, then taken)", n)
	}
	if n := countOf(run.triggers, "y"); n != 1 {
		t.Errorf("y handed %d times, want once", n)
	}
	if n := logs.FilterMessage("trigger kept until its job can run").FilterLevelExact(zapcore.WarnLevel).Len(); n != 1 {
		t.Errorf("%d warnings for the kept request, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, d := range waits {
		if d != 7*time.Second {
			t.Fatalf("waited %s between rounds, want Retry", d)
		}
	}
}

// TestConsume_EndsWithItsChannel: Consume hands what comes and returns once the channel closes.
func TestConsume_EndsWithItsChannel(t *testing.T) {
	reqs := &requests{reqs: []control.Request{request("x")}, done: make(chan string, 1)}
	h := &Handler{Runner: &runner{}, Requests: reqs, Log: zap.NewNop()}
	ch := make(chan control.Request, 1)
	ch <- request("x")
	close(ch)
	if err := h.Consume(context.Background(), ch); err != nil {
		t.Fatal(err)
	}
	if key := <-reqs.done; key != request("x").Key {
		t.Fatalf("removed %s, want x's", key)
	}
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// TestHandle_DropsARequestFarAhead: a request stamped more than MaxAhead past the leader's clock
// is removed without a run, so that its slot never stands as the job's last run; one a few
// minutes ahead (a requester's clock a little fast) runs.
func TestHandle_DropsARequestFarAhead(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		at    time.Time
		taken bool
	}{
		{"FewMinutes", now.Add(5 * time.Minute), true},
		{"Far", now.Add(MaxAhead + time.Second), false},
		{"Year9999", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := request("x")
			r.At = c.at
			reqs := &requests{reqs: []control.Request{r}, done: make(chan string, 1)}
			run := &runner{}
			h := &Handler{Runner: run, Requests: reqs, Log: zap.NewNop(), Now: func() time.Time { return now }}
			h.Handle(context.Background(), r)
			if left, _ := reqs.Requests(context.Background()); len(left) != 0 {
				t.Fatalf("requests left %v, want it removed", left)
			}
			if ran := len(run.triggers) == 1; ran != c.taken {
				t.Fatalf("handed to the runner: %v, want %v", ran, c.taken)
			}
		})
	}
}

// TestHandle_DropsARequestOlderThanTheHistory: a request for a slot older than its job's
// history.max_age is removed without a run: the retention prunes that slot's run, so the request
// written again (a key put twice, an etcd snapshot restored) would run the slot a second time. A
// job without an age limit, or a slot within it, runs.
func TestHandle_DropsARequestOlderThanTheHistory(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	const maxAge = 24 * time.Hour
	for _, c := range []struct {
		name   string
		at     time.Time
		maxAge time.Duration
		taken  bool
	}{
		{"WithinMaxAge", now.Add(-maxAge + time.Minute), maxAge, true},
		{"OlderThanMaxAge", now.Add(-maxAge - time.Second), maxAge, false},
		{"Year2020", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), maxAge, false},
		{"NoAgeLimit", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := request("x")
			r.At = c.at
			reqs := &requests{reqs: []control.Request{r}, done: make(chan string, 1)}
			run := &runner{}
			var asked []string
			h := &Handler{Runner: run, Requests: reqs, Log: zap.NewNop(), Now: func() time.Time { return now },
				MaxAge: func(job string) time.Duration { asked = append(asked, job); return c.maxAge }}
			h.Handle(context.Background(), r)
			if left, _ := reqs.Requests(context.Background()); len(left) != 0 {
				t.Fatalf("requests left %v, want it removed", left)
			}
			if ran := len(run.triggers) == 1; ran != c.taken {
				t.Fatalf("handed to the runner: %v, want %v", ran, c.taken)
			}
			if len(asked) != 1 || asked[0] != "x" {
				t.Fatalf("MaxAge asked for %v, want [x]", asked)
			}
		})
	}
}
