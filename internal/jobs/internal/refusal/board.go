package refusal

import (
	"cmp"
	"slices"
	"sync"
)

// Board is the jobs a runner's current term has blocked, for status pages and /readyz, read
// while the term's loop changes it. The zero Board is empty and ready to use.
type Board struct {
	mu sync.Mutex
	m  map[string]Block
}

// Set records b as blocked (on) or its job as no longer blocked.
func (bd *Board) Set(b Block, on bool) {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	if !on {
		delete(bd.m, b.Job)
		return
	}
	if bd.m == nil {
		bd.m = map[string]Block{}
	}
	bd.m[b.Job] = b
}

// List returns the blocked jobs, by name.
func (bd *Board) List() []Block {
	bd.mu.Lock()
	out := make([]Block, 0, len(bd.m))
	for _, b := range bd.m {
		out = append(out, b)
	}
	bd.mu.Unlock()
	slices.SortFunc(out, func(a, b Block) int { return cmp.Compare(a.Job, b.Job) })
	return out
}

// Has reports whether job is blocked.
func (bd *Board) Has(job string) bool {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	_, ok := bd.m[job]
	return ok
}
