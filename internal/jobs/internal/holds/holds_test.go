package holds

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"scheduler"
)

var errGaveUp = fmt.Errorf("raise timed out: %w", scheduler.ErrFenceHeld)

// fakeStore is fences some of which are held; its lock table shows the jobs in visible.
type fakeStore struct {
	mu      sync.Mutex
	held    map[string]bool // a raise including one of these gives up
	refused map[string]bool // a raise including one of these is refused
	visible []string        // what Held answers; nil: the store cannot tell
	raised  map[string]bool
	gaveUp  int
	kept    []string // jobs held back, in order
}

func newFake(held ...string) *fakeStore {
	f := &fakeStore{held: map[string]bool{}, refused: map[string]bool{}, raised: map[string]bool{}}
	for _, j := range held {
		f.held[j] = true
	}
	return f
}

func (f *fakeStore) ops(tb testing.TB) Ops {
	return Ops{
		Raise: func(_ context.Context, jobs []string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, j := range jobs {
				if f.held[j] {
					f.gaveUp++
					return errGaveUp
				}
				if f.refused[j] {
					return &scheduler.FenceError{Job: j, Token: 2, Fence: 9}
				}
			}
			for _, j := range jobs {
				f.raised[j] = true
			}
			return nil
		},
		Held: func(context.Context, []string) []string { return f.visible },
		Hold: func(job string, err error) bool {
			if !errors.Is(err, scheduler.ErrFenceHeld) {
				tb.Errorf("Hold(%q, %v): want a raise that gave up", job, err)
			}
			f.kept = append(f.kept, job)
			return true
		},
		Settle: func(_ context.Context, jobs []string, err error) error {
			var fe *scheduler.FenceError
			if !errors.As(err, &fe) {
				return err
			}
			// As the runner does: the refused job blocked, the others raised again.
			rest := slices.DeleteFunc(slices.Clone(jobs), func(j string) bool { return j == fe.Job })
			return settle(context.Background(), rest, f.ops(tb).Raise(context.Background(), rest), f.ops(tb))
		},
	}
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("j%03d", i)
	}
	return out
}

// TestAround covers what the store's lock table may say: the held jobs, nothing, a job whose lock
// was let go since, a job outside the set, or too little.
func TestAround(t *testing.T) {
	jobs := names(20)
	for _, tc := range []struct {
		name    string
		held    []string
		visible []string
		kept    []string
		gaveUp  int // raises that gave up after the first
	}{
		{"TheStoreNamesTheHeldJob", []string{"j007"}, []string{"j007"}, []string{"j007"}, 0},
		{"TheStoreNamesSeveral", []string{"j002", "j013"}, []string{"j013", "j002"}, []string{"j002", "j013"}, 0},
		{"TheStoreCannotTell", []string{"j007"}, nil, []string{"j007"}, 2},
		{"TheStoreNamesAJobOutsideTheSet", []string{"j007"}, []string{"other"}, []string{"j007"}, 2},
		// A lock let go between the store's read and the raise: the job is held back all the same,
		// and the runner raises its fence again later; every other job is raised now.
		{"TheLockIsLetGoAfterTheRead", nil, []string{"j007"}, []string{"j007"}, 0},
		// A hold the lock table does not show (a row lock), beside one it does: the others' raise
		// gives up once more, and the parts find it.
		{"TheStoreSeesOneHoldOfTwo", []string{"j003", "j011"}, []string{"j003"}, []string{"j003", "j011"}, 1 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(tc.held...)
			f.visible = tc.visible
			if err := Around(context.Background(), jobs, errGaveUp, f.ops(t)); err != nil {
				t.Fatalf("Around=%v, want nil", err)
			}
			slices.Sort(f.kept)
			if !slices.Equal(f.kept, tc.kept) {
				t.Fatalf("held back %v, want %v", f.kept, tc.kept)
			}
			for _, j := range jobs {
				if !f.raised[j] && !slices.Contains(f.kept, j) {
					t.Errorf("job %s neither raised nor held back", j)
				}
			}
			if f.gaveUp != tc.gaveUp {
				t.Fatalf("raises that gave up=%d, want %d", f.gaveUp, tc.gaveUp)
			}
		})
	}

	t.Run("ARefusedPartIsSettled", func(t *testing.T) {
		f := newFake("j004")
		f.refused["j015"] = true
		if err := Around(context.Background(), jobs, errGaveUp, f.ops(t)); err != nil {
			t.Fatalf("Around=%v, want nil", err)
		}
		if !slices.Equal(f.kept, []string{"j004"}) || f.raised["j015"] || !f.raised["j014"] {
			t.Fatalf("held back %v, raised j014=%v j015=%v; want j004 held back, j015 settled, j014 raised", f.kept, f.raised["j014"], f.raised["j015"])
		}
	})

	t.Run("AJobThatCannotBeHeldBackEndsTheTakeover", func(t *testing.T) {
		f := newFake("j004")
		f.visible = []string{"j004"}
		ops := f.ops(t)
		ops.Hold = func(string, error) bool { return false }
		if err := Around(context.Background(), jobs, errGaveUp, ops); !errors.Is(err, scheduler.ErrFenceHeld) {
			t.Fatalf("Around=%v, want the raise that gave up", err)
		}
	})
}

// TestAround_NeverRaisesAHeldFenceNorSkipsAFreeOne: whatever the lock table shows (held jobs
// missing, free ones named), every job is raised or held back, a held one is never reported
// raised, and a job is held back only when the store named it or its own raise gave up.
func TestAround_NeverRaisesAHeldFenceNorSkipsAFreeOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		jobs := names(1 + rng.IntN(60))
		var held, visible []string
		for _, j := range jobs {
			if rng.IntN(8) == 0 {
				held = append(held, j)
				if rng.IntN(2) == 0 {
					visible = append(visible, j)
				}
			} else if rng.IntN(20) == 0 {
				visible = append(visible, j) // let go since the read
			}
		}
		if len(held) == 0 {
			continue
		}
		f := newFake(held...)
		if rng.IntN(4) > 0 {
			f.visible = visible
		}
		if err := Around(context.Background(), jobs, errGaveUp, f.ops(t)); err != nil {
			t.Fatalf("round %d: Around=%v", round, err)
		}
		for _, j := range jobs {
			kept := slices.Contains(f.kept, j)
			switch {
			case f.held[j] && f.raised[j]:
				t.Fatalf("round %d: held job %s reported raised", round, j)
			case !f.raised[j] && !kept:
				t.Fatalf("round %d: job %s neither raised nor held back", round, j)
			case kept && !f.held[j] && !slices.Contains(f.visible, j):
				t.Fatalf("round %d: free job %s held back though the store did not name it", round, j)
			}
		}
	}
}
