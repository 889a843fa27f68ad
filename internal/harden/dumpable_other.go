//go:build !linux

package harden

// NonDumpable does nothing where there is no PR_SET_DUMPABLE: there the deployment must keep
// jobs from reading the daemon's memory, by running them as another user.
func NonDumpable() error { return nil }
