package outcomes

import (
	"sync"
	"time"

	"scheduler"
)

// MaxKept bounds the outcomes a Kept holds.
const MaxKept = 4096

// Kept holds the outcomes of runs whose executors returned in a term that ended before their
// outcomes were written, for a later term of the same process, which writes them instead of
// running their slots again. Past MaxKept, one kept before is dropped: its slot runs again.
// The zero Kept is empty and ready to use; it is safe for concurrent use.
type Kept struct {
	mu sync.Mutex
	m  map[int64]Unwritten // by run id
}

// Unwritten is a kept outcome: the completion to write, how long its run took and, once taken,
// the run's slot.
type Unwritten struct {
	C    scheduler.Completion
	Took time.Duration
	Slot time.Time
}

// Keep remembers c, the outcome of run c.RunID, which took took.
func (k *Kept) Keep(c scheduler.Completion, took time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[int64]Unwritten{}
	}
	if len(k.m) >= MaxKept {
		for id := range k.m {
			delete(k.m, id)
			break
		}
	}
	k.m[c.RunID] = Unwritten{C: c, Took: took}
}

// Take splits orphans into those to take over (rest) and the kept outcomes of the others
// (written), which it forgets: their runs are finished with them, not run again.
func (k *Kept) Take(orphans []scheduler.Run) (rest []scheduler.Run, written []Unwritten) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.m) == 0 {
		return orphans, nil
	}
	rest = orphans[:0:0]
	for _, o := range orphans {
		if u, ok := k.m[o.RunID]; ok && u.C.Job == o.Job {
			delete(k.m, o.RunID)
			u.Slot = o.ScheduledAt
			written = append(written, u)
			continue
		}
		rest = append(rest, o)
	}
	return rest, written
}

// Len returns the number of outcomes kept.
func (k *Kept) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}
