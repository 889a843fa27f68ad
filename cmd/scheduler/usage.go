package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"scheduler/cmd/scheduler/internal/suggest"
)

// errHelpShown is the error of a bare `scheduler`: the help is printed already, so there is
// nothing more to print, and the exit status is that of a usage error.
var errHelpShown = &usageError{errors.New("no command given")}

// commandPrefix names cmd at the start of a message, without the program's name, which the
// message gets when it is printed: "status: " for `scheduler status`, "" for `scheduler`.
func commandPrefix(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return ""
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") + ": "
}

// unknownCommand is the usage error for a command name root does not know, with the nearest
// commands.
func unknownCommand(root *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if near := root.SuggestionsFor(name); len(near) > 0 { // cobra's, by distance and prefix
		msg += fmt.Sprintf("; did you mean %q?", near[0])
	}
	return &usageError{errors.New(msg + " (see scheduler --help)")}
}

// flagError is the usage error for a bad flag of cmd: an unknown one gets the nearest flag cmd
// takes.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if near := suggest.Flag(cmd, name); near != "" {
			msg += fmt.Sprintf("; did you mean --%s?", near)
		}
	}
	return &usageError{fmt.Errorf("%s%s", commandPrefix(cmd), msg)}
}
