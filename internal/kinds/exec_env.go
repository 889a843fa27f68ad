package kinds

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"scheduler"
)

// environ is the job's environment for run.
func (j *ExecJob) environ(run scheduler.Attempt, secret string) []string {
	env := make([]string, 0, len(j.env)+6)
	env = append(env, j.env...)
	env = append(env,
		EnvFenceToken+"="+strconv.FormatInt(run.Token, 10),
		EnvJob+"="+run.Job,
		EnvScheduledAt+"="+run.Slot.Format(time.RFC3339),
		EnvRunID+"="+run.RunID,
		EnvAttempt+"="+strconv.Itoa(run.Attempt),
	)
	if secret != "" {
		env = append(env, EnvRunSecret+"="+secret)
	}
	return env
}

// inheritedVar reports whether a job inherits the daemon's variable name.
func inheritedVar(name string) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// isRunVariable reports whether name is one of the variables set for each run.
func isRunVariable(name string) bool {
	switch name {
	case EnvFenceToken, EnvJob, EnvScheduledAt, EnvRunID, EnvAttempt, EnvRunSecret:
		return true
	}
	return false
}

// sortedNames returns the keys of m in order, so that problems and variables come out stably.
func sortedNames(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
