// Package clock is the runner's source of time: Clock, the interface its parts are given; Real,
// the wall clock, for the daemon, whose TimerAt fires at its instant without a time.Timer's
// lateness, so that a slot's runs start when it is due; and Fake, a clock only its user moves,
// so that schedules, retries, timeouts and catch-up are tested exactly and without sleeping.
package clock
