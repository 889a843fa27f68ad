package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// restoreEnvCase gives the variables of every `env` mapping (of defaults and of each job) the
// names the file spells: viper lowercases every key it reads, and environment variable names are
// case-sensitive (PGPASSWORD is not pgpassword). raw is viper's settings, doc the file as
// yaml.v3 decoded it. Two names of one mapping that differ only in case cannot both be kept,
// and are a problem.
func restoreEnvCase(raw map[string]any, doc any) []Problem {
	file, _ := doc.(map[string]any)
	if file == nil {
		return nil
	}
	var problems []Problem
	restore := func(key string, dst, src any) {
		d, _ := dst.(map[string]any)
		s, _ := src.(map[string]any)
		if d == nil || s == nil {
			return
		}
		got, _ := d["env"].(map[string]any)
		spelled, _ := lowerLookup(s, "env").(map[string]any)
		if got == nil || spelled == nil {
			return
		}
		byLower := map[string][]string{}
		for name := range spelled {
			lower := strings.ToLower(name)
			byLower[lower] = append(byLower[lower], name)
		}
		for _, lower := range slices.Sorted(maps.Keys(byLower)) {
			names := byLower[lower]
			v, ok := got[lower]
			if len(names) > 1 {
				// Viper kept either value: neither is decoded, so that every read finds the same.
				delete(got, lower)
				slices.Sort(names)
				problems = append(problems, Problem{Key: key + ".env", Msg: fmt.Sprintf("%s and %s differ only in case; keep one of them",
					strings.Join(names[:len(names)-1], ", "), names[len(names)-1])})
				continue
			}
			if ok && names[0] != lower {
				delete(got, lower)
				got[names[0]] = v
			}
		}
	}
	restore("defaults", raw["defaults"], lowerLookup(file, "defaults"))
	jobs, _ := raw["jobs"].([]any)
	spelled, _ := lowerLookup(file, "jobs").([]any)
	for i := range min(len(jobs), len(spelled)) {
		restore(fmt.Sprintf("jobs[%d]", i), jobs[i], spelled[i])
	}
	return problems
}
