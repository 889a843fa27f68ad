package outcomes

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"scheduler"
)

// fakeLedger finishes runs as told: many answers CompleteMany (nil: every run written), one
// answers Complete per job; it counts the calls.
type fakeLedger struct {
	many       func(cs []scheduler.Completion) ([]scheduler.Result, error)
	one        map[string]error
	singles    int
	batches    []int // sizes
	tokensSeen []int64
}

func (l *fakeLedger) Complete(_ context.Context, token int64, c scheduler.Completion) (scheduler.Run, error) {
	l.singles++
	l.tokensSeen = append(l.tokensSeen, token)
	return scheduler.Run{RunID: c.RunID, Job: c.Job}, l.one[c.Job]
}

func (l *fakeLedger) CompleteMany(_ context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	l.batches = append(l.batches, len(cs))
	l.tokensSeen = append(l.tokensSeen, token)
	if l.many != nil {
		return l.many(cs)
	}
	return allWritten(cs), nil
}

func allWritten(cs []scheduler.Completion) []scheduler.Result {
	out := make([]scheduler.Result, len(cs))
	for i := range out {
		out[i].Written = true
	}
	return out
}

func completions(jobs ...string) []scheduler.Completion {
	cs := make([]scheduler.Completion, len(jobs))
	for i, j := range jobs {
		cs[i] = scheduler.Completion{RunID: int64(i + 1), Job: j, Status: scheduler.StatusSucceeded}
	}
	return cs
}

// TestComplete: how each run's write ends, for each answer of the ledger.
func TestComplete(t *testing.T) {
	errDown := errors.New("store down")
	fenced := &scheduler.FenceError{Job: "b", Token: 7, Fence: 9}
	// heldIf fails a batch holding a run of job as a write that gave up waiting for its fence.
	heldIf := func(job string) func([]scheduler.Completion) ([]scheduler.Result, error) {
		return func(cs []scheduler.Completion) ([]scheduler.Result, error) {
			for _, c := range cs {
				if c.Job == job {
					return nil, &scheduler.HeldError{Job: job, Err: errDown}
				}
			}
			return allWritten(cs), nil
		}
	}
	xHeld := func(job string) bool { return job == "x" }
	for _, tc := range []struct {
		name        string
		cs          []scheduler.Completion
		ledger      *fakeLedger
		heldBack    func(string) bool
		want        []error // errors.Is targets; nil: written
		wantSingles int
		wantBatches []int
	}{
		{"OneAlone", completions("a"), &fakeLedger{}, nil, []error{nil}, 1, nil},
		{"OneAloneFails", completions("a"), &fakeLedger{one: map[string]error{"a": errDown}}, nil, []error{errDown}, 1, nil},
		{"Batch", completions("a", "b", "c"), &fakeLedger{}, nil, []error{nil, nil, nil}, 0, []int{3}},
		{"BatchFails", completions("a", "b"), &fakeLedger{many: func([]scheduler.Completion) ([]scheduler.Result, error) { return nil, errDown }}, nil,
			[]error{errDown, errDown}, 0, []int{2}},
		{"BatchRefusedRetriedOneByOne", completions("a", "b"), &fakeLedger{
			many: func([]scheduler.Completion) ([]scheduler.Result, error) { return nil, fmt.Errorf("batch: %w", fenced) },
			one:  map[string]error{"b": fenced}}, nil,
			[]error{nil, scheduler.ErrFenced}, 2, []int{2}},
		{"NotRunning", completions("a", "b"), &fakeLedger{many: func(cs []scheduler.Completion) ([]scheduler.Result, error) {
			out := allWritten(cs)
			out[1].Written = false
			return out, nil
		}}, nil, []error{nil, scheduler.ErrNotRunning}, 0, []int{2}},
		{"WrongCount", completions("a", "b"), &fakeLedger{many: func(cs []scheduler.Completion) ([]scheduler.Result, error) { return allWritten(cs[:1]), nil }}, nil,
			[]error{errAny, errAny}, 0, []int{2}},
		{"PastMaxBatch", completions(make([]string, MaxBatch+1)...), &fakeLedger{}, nil, make([]error, MaxBatch+1), 0, []int{MaxBatch, 1}},
		// A batch that gave up waiting for x's fence is written again without x's runs, at
		// once: the other jobs' runs do not wait for x's retry, nor for its fence again.
		{"BatchHeldForOneJob", completions("a", "x", "b", "x"), &fakeLedger{many: heldIf("x")}, nil,
			[]error{nil, scheduler.ErrFenceHeld, nil, scheduler.ErrFenceHeld}, 0, []int{4, 2}},
		{"BatchHeldForItsOnlyJob", completions("x", "x"), &fakeLedger{many: heldIf("x")}, nil,
			[]error{scheduler.ErrFenceHeld, scheduler.ErrFenceHeld}, 0, []int{2}},
		// The runs of a job held back are not written at all: the write would wait for its fence.
		{"HeldBackNotWritten", completions("a", "x", "b"), &fakeLedger{many: heldIf("x")}, xHeld,
			[]error{nil, scheduler.ErrFenceHeld, nil}, 0, []int{2}},
		{"HeldBackAlone", completions("x"), &fakeLedger{one: map[string]error{"x": errDown}}, xHeld,
			[]error{scheduler.ErrFenceHeld}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Complete(context.Background(), tc.ledger, 7, tc.cs, tc.heldBack)
			if len(errs) != len(tc.cs) {
				t.Fatalf("%d errors for %d completions", len(errs), len(tc.cs))
			}
			for i, want := range tc.want {
				switch {
				case want == nil && errs[i] != nil:
					t.Fatalf("run %d: err=%v, want written", i, errs[i])
				case want == errAny && errs[i] == nil:
					t.Fatalf("run %d: written, want an error", i)
				case want != nil && want != errAny && !errors.Is(errs[i], want):
					t.Fatalf("run %d: err=%v, want %v", i, errs[i], want)
				}
			}
			if tc.ledger.singles != tc.wantSingles || fmt.Sprint(tc.ledger.batches) != fmt.Sprint(tc.wantBatches) {
				t.Fatalf("%d singles, batches %v; want %d, %v", tc.ledger.singles, tc.ledger.batches, tc.wantSingles, tc.wantBatches)
			}
			for _, tok := range tc.ledger.tokensSeen {
				if tok != 7 {
					t.Fatalf("write with token %d, want 7", tok)
				}
			}
		})
	}
}

// errAny stands for any error in TestComplete's table.
var errAny = errors.New("any error")
