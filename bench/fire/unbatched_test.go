package fire

import "scheduler/internal/jobs"

// unbatched hides the optional batch methods of a Ledger (CompleteMany, ReclaimMany), so that
// the runner completes and takes over runs one at a time, as the design before claiming ahead
// did.
type unbatched struct{ jobs.Ledger }
