package config

import (
	"fmt"
	"strconv"

	"scheduler/internal/kinds"
)

// checkUserSwitch refuses a table with an exec job that this process could not run as the user
// or group the job sets, naming the first such job. It is the daemon's check, at start and on a
// reload: `validate` may well run as another user than the daemon.
func checkUserSwitch(cfg *Config, switcher kinds.UserSwitch) error {
	for _, j := range cfg.Jobs {
		if j.Type != "exec" {
			continue
		}
		if err := kinds.CheckSwitch(j.User, j.Group, switcher); err != nil {
			return fmt.Errorf("job %q: %w", j.Name, err)
		}
	}
	return nil
}

// identitiesAsStrings lets user and group be written as bare numbers (user: 1001), which YAML
// reads as integers, in `defaults` and in every job of raw, the settings before decoding.
func identitiesAsStrings(raw map[string]any) {
	fix := func(m map[string]any) {
		for _, k := range []string{"user", "group"} {
			switch v := m[k].(type) {
			case int:
				m[k] = strconv.Itoa(v)
			case int64:
				m[k] = strconv.FormatInt(v, 10)
			case uint64:
				m[k] = strconv.FormatUint(v, 10)
			}
		}
	}
	if d, ok := raw["defaults"].(map[string]any); ok {
		fix(d)
	}
	list, _ := raw["jobs"].([]any)
	for _, item := range list {
		if job, ok := item.(map[string]any); ok {
			fix(job)
		}
	}
}
