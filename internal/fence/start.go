package fence

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"scheduler"
)

// maxStartBatch is the most runs one StartMany transaction marks: like a
// reclaim, a fenced batch holds an advisory lock per job until it commits.
const maxStartBatch = 1000

// ClaimAheadMany claims slots like ClaimMany, for runs that have not
// started yet: a leader claims slots shortly before they come due, so that
// firing them makes no round trip. Such a run has attempt 0 and no start
// time (as Run.Attempt says: it never ran) until StartMany marks it
// started; a run taken over in that state (Reclaim) becomes attempt 1, so
// that a slot claimed ahead by a leader that stopped before the slot came
// due is not counted as attempted twice.
func (s *Store) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	return s.claimMany(ctx, token, node, slots, true)
}

// StartMany records that runs claimed ahead (ClaimAheadMany) started, now:
// their attempt becomes 1 and their start time is set, fenced with token on
// their jobs. Runs that started already, are finished, or are running under
// another token are left as they are. It returns how many runs it marked.
func (s *Store) StartMany(ctx context.Context, token int64, refs []scheduler.RunRef) (int, error) {
	for _, r := range refs {
		if err := checkJobToken(r.Job, token); err != nil {
			return 0, fmt.Errorf("start run %d: %w", r.RunID, err)
		}
	}
	// In run id order, as CompleteMany writes: a herd's starts are recorded while its first
	// outcomes are written, and two batches that lock the same runs in different orders can
	// deadlock, which costs the one the database aborts a second and a retry.
	refs = slices.SortedFunc(slices.Values(refs), func(a, b scheduler.RunRef) int { return cmp.Compare(a.RunID, b.RunID) })
	marked := 0
	err := inBatches(refs, maxStartBatch, func(part []scheduler.RunRef) error {
		n, err := retried(ctx, s, part[0].Job, token, func() (int, error) { return s.b.Start(ctx, token, s.now(), part) })
		if err != nil {
			return fmt.Errorf("start %d runs with token %d: %w", len(part), token, err)
		}
		marked += n
		return nil
	})
	return marked, err
}
