package jobs

import "scheduler/internal/jobs/internal/clock"

// Clock is the runner's source of time, injected so that schedules, retries, timeouts and
// catch-up can be tested exactly and without sleeping.
type Clock = clock.Clock

// Timer is a one-shot timer of a Clock.
type Timer = clock.Timer

// RealClock is the wall clock.
type RealClock = clock.Real
