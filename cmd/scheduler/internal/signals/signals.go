// Package signals is how the scheduler's process answers SIGINT and SIGTERM: the first starts a
// graceful stop, the second ends the process at once, its exec jobs' process groups first, so
// that no job goes on running beside the run of its slot that the next leader starts.
package signals

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"scheduler/internal/kinds"
)

// Context returns a context cancelled by the first SIGINT or SIGTERM; the second kills every
// exec job's process group (kinds.KillJobGroups) and then the process, by the signal's default
// action.
func Context() context.Context {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		second := make(chan os.Signal, 1)
		signal.Notify(second, os.Interrupt, syscall.SIGTERM) // before stop: no moment without a handler
		stop()
		sig := <-second
		kinds.KillJobGroups()
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
	}()
	return ctx
}
