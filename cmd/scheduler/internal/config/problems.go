package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a configuration, at a key path such as jobs[1].schedule.
type Problem struct {
	Key string // empty for a problem with the whole file
	Msg string
}

// String is the problem as printed: its key path, then what is wrong there.
func (p Problem) String() string {
	if p.Key == "" {
		return p.Msg
	}
	return p.Key + ": " + p.Msg
}

// Error reports every problem of an invalid configuration file. The command line turns it
// into exit status 2.
type Error struct {
	File     string
	Problems []Problem
	// Env is set when some problem lies in a SCHEDULER_* variable rather than in the file.
	Env bool
}

// Error names the file and lists its problems, one a line.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Env {
		fmt.Fprintf(&b, "invalid configuration %s and %s_* environment:", e.File, envPrefix)
	} else {
		fmt.Fprintf(&b, "invalid configuration %s:", e.File)
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}
