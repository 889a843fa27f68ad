package holds

import (
	"context"
	"errors"
	"slices"
	"sync"

	"scheduler"
)

// Ops are the store's and the runner's parts of a search.
type Ops struct {
	// Raise raises the fences of jobs to the term's token. It may be called from several
	// goroutines at once.
	Raise func(ctx context.Context, jobs []string) error
	// Held returns the jobs of jobs whose fence another session holds now, or none when the
	// store cannot tell (nil: it never can).
	Held func(ctx context.Context, jobs []string) []string
	// Hold holds back job, whose fence is held (err: the raise that gave up waiting for it);
	// false when it cannot, and the takeover then ends with err.
	Hold func(job string, err error) bool
	// Settle answers a raise of jobs that failed otherwise than by giving up waiting (err): a
	// refusal, whose job the runner blocks before it raises the others again, or an error that
	// ends the takeover.
	Settle func(ctx context.Context, jobs []string, err error) error
}

// parts is how many parts a set of jobs is split into when the store names no held job.
const parts = 8

// Around raises the fences of jobs after a raise of them all gave up waiting (err, wrapping
// scheduler.ErrFenceHeld), holding back the jobs whose fences are held.
func Around(ctx context.Context, jobs []string, err error, ops Ops) error {
	held := map[string]bool{}
	if ops.Held != nil {
		for _, j := range ops.Held(ctx, jobs) {
			held[j] = true
		}
	}
	rest := slices.DeleteFunc(slices.Clone(jobs), func(j string) bool { return held[j] })
	if len(rest) == len(jobs) {
		return split(ctx, jobs, err, ops)
	}
	for _, j := range jobs {
		if held[j] && !ops.Hold(j, err) {
			return err
		}
	}
	if len(rest) == 0 {
		return nil
	}
	// A hold the store did not list, or one taken since it was read, makes this raise give up
	// too; the jobs left are then searched again, and each round holds back one job or more.
	return settle(ctx, rest, ops.Raise(ctx, rest), ops)
}

// split raises jobs in parts, in parallel, after a raise of them gave up (err); a part that gives
// up is searched again, down to single jobs, which are held back.
func split(ctx context.Context, jobs []string, err error, ops Ops) error {
	if len(jobs) == 1 {
		if ops.Hold(jobs[0], err) {
			return nil
		}
		return err
	}
	chunks := slices.Collect(slices.Chunk(jobs, (len(jobs)+parts-1)/parts))
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	for i, part := range chunks {
		wg.Go(func() { errs[i] = ops.Raise(ctx, part) })
	}
	wg.Wait()
	for i, part := range chunks {
		if err := settle(ctx, part, errs[i], ops); err != nil {
			return err
		}
	}
	return nil
}

// settle answers a raise of jobs that returned err.
func settle(ctx context.Context, jobs []string, err error, ops Ops) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, scheduler.ErrFenceHeld):
		return Around(ctx, jobs, err, ops)
	}
	return ops.Settle(ctx, jobs, err)
}

// Reader is a store that can tell whose fences other sessions hold.
type Reader interface {
	// HeldFences returns the jobs of jobs whose raise to token would wait for another
	// session's transaction, as far as the store can see now.
	HeldFences(ctx context.Context, jobs []string, token int64) ([]string, error)
}

// HeldBy is an Ops.Held that asks r, for token. A failed read, reported to failed with the
// number of jobs asked about, names no job: the jobs are then found by raising them in parts.
func HeldBy(r Reader, token int64, failed func(jobs int, err error)) func(ctx context.Context, jobs []string) []string {
	return func(ctx context.Context, jobs []string) []string {
		held, err := r.HeldFences(ctx, jobs, token)
		if err != nil {
			failed(len(jobs), err)
		}
		return held
	}
}
