//go:build !linux

package main

// makeNonDumpable does nothing where there is no PR_SET_DUMPABLE: there the deployment must keep
// jobs from reading the daemon's memory, by running them as another user.
func makeNonDumpable() error { return nil }
