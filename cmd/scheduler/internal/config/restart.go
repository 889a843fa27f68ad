package config

import (
	"reflect"
	"slices"

	"scheduler/cmd/scheduler/internal/config/internal/keypath"
)

// reloadable are the keys a reload applies: the table (with what its jobs inherit), the job
// labels of the metrics and the console's admin token.
var reloadable = map[string]bool{
	"jobs": true, "defaults": true, "http.admin_token_file": true, "history.max_age": true, "history.max_runs": true, "metrics.per_job": true,
}

// RestartKeys returns the key paths, sorted, of the settings that differ between c and next
// and that a reload does not apply.
func (c *Config) RestartKeys(next *Config) []string {
	a, b := reflect.ValueOf(*c), reflect.ValueOf(*next)
	var keys []string
	keypath.Walk(a.Type(), "", nil, func(key string, index []int, leaf bool) bool {
		switch {
		case reloadable[key]:
			return false
		case leaf && !reflect.DeepEqual(a.FieldByIndex(index).Interface(), b.FieldByIndex(index).Interface()):
			keys = append(keys, key)
		}
		return true
	})
	slices.Sort(keys)
	return keys
}
