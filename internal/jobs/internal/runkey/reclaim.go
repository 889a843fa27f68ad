package runkey

import (
	"fmt"

	"scheduler"
)

// Keys are the slot keys of runs.
func Keys(runs []scheduler.Run) []scheduler.SlotKey {
	keys := make([]scheduler.SlotKey, len(runs))
	for i, r := range runs {
		keys[i] = r.Key()
	}
	return keys
}

// Reclaimed maps the ledger's answer to a ReclaimMany of orphans (got, err) onto each orphan:
// runs[i] is the run taken over, or errs[i] says why orphans[i] was not. runs and errs are as
// long as orphans.
func Reclaimed(orphans []scheduler.Run, got []scheduler.Result, err error, runs []scheduler.Run, errs []error) {
	if err == nil && len(got) != len(orphans) {
		err = fmt.Errorf("the ledger answered %d takeovers for %d runs", len(got), len(orphans))
	}
	for i, o := range orphans {
		switch {
		case err != nil:
			errs[i] = err
		case !got[i].Written:
			errs[i] = fmt.Errorf("run %d of job %q is no longer an orphan", o.RunID, o.Job)
		default:
			runs[i] = got[i].Run
		}
	}
}
