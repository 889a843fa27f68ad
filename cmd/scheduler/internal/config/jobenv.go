package config

import (
	"fmt"
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
		spelled, _ := foldLookup(s, "env").(map[string]any)
		if got == nil || spelled == nil {
			return
		}
		seen := map[string]string{}
		for name := range spelled {
			lower := strings.ToLower(name)
			if other, dup := seen[lower]; dup {
				a, b := min(name, other), max(name, other)
				problems = append(problems, Problem{Key: key + ".env", Msg: fmt.Sprintf("%s and %s differ only in case; keep one of them", a, b)})
				continue
			}
			seen[lower] = name
			if v, ok := got[lower]; ok && name != lower {
				delete(got, lower)
				got[name] = v
			}
		}
	}
	restore("defaults", raw["defaults"], foldLookup(file, "defaults"))
	jobs, _ := raw["jobs"].([]any)
	spelled, _ := foldLookup(file, "jobs").([]any)
	for i := range min(len(jobs), len(spelled)) {
		restore(fmt.Sprintf("jobs[%d]", i), jobs[i], spelled[i])
	}
	return problems
}

// foldLookup returns the value of m under the key equal to key under case folding, as viper
// reads keys; nil when there is none.
func foldLookup(m map[string]any, key string) any {
	if v, ok := m[key]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}
