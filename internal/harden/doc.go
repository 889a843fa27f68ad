// Package harden hardens the daemon's process against the jobs it runs: an exec job runs as the
// daemon's user unless it names another, and must not read the secrets in the daemon's
// environment or memory.
package harden
