package kinds

import (
	"errors"
	"strings"
)

// Problem is one thing wrong with a kind's configuration, at a key path relative to the job
// (command[0], env.HOME, headers.Fencing-Token, params.clients), so that the caller can place it
// under the job's own path.
type Problem struct {
	Key     string
	Message string
}

// Error returns "KEY: message", so that a constructor's refusal reads like the line the
// configuration check prints.
func (p Problem) Error() string {
	if p.Key == "" {
		return p.Message
	}
	return p.Key + ": " + p.Message
}

// problems collects the Problems of one Check.
type problems []Problem

func (ps *problems) add(key, msg string) { *ps = append(*ps, Problem{Key: key, Message: msg}) }

// refusal joins the problems as one error, each a Problem errors.As finds; nil when there are
// none.
func refusal(ps []Problem) error {
	if len(ps) == 0 {
		return nil
	}
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// TopKey is the first element of a problem's key path: "env" for env.HOME, "command" for
// command[0]. A caller uses it to tell a value the job set from one it inherited.
func TopKey(key string) string {
	if i := strings.IndexAny(key, ".["); i >= 0 {
		return key[:i]
	}
	return key
}
