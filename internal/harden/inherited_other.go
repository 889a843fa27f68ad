//go:build !linux

package harden

// CloseOnExec does nothing off Linux: there the daemon must be started without stray open
// files, which its exec jobs would inherit.
func CloseOnExec() error { return nil }
