package refusal

import (
	"slices"
	"sync"
	"testing"
)

// TestBoard: a board lists its blocked jobs by name, forgets a job set off, and may be set and
// read at once.
func TestBoard(t *testing.T) {
	var bd Board
	if got := bd.List(); len(got) != 0 {
		t.Fatalf("empty board lists %v", got)
	}
	var wg sync.WaitGroup
	for _, job := range []string{"c", "a", "b"} {
		wg.Go(func() { bd.Set(Block{Job: job, Token: 7}, true) })
		wg.Go(func() { _ = bd.List() })
	}
	wg.Wait()
	bd.Set(Block{Job: "b"}, false)
	bd.Set(Block{Job: "unknown"}, false)
	var jobs []string
	for _, b := range bd.List() {
		jobs = append(jobs, b.Job)
	}
	if !slices.Equal(jobs, []string{"a", "c"}) {
		t.Fatalf("board lists %v, want [a c]", jobs)
	}
}
