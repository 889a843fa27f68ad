// Package inherit merges a configuration's `defaults` section into each job's mapping, as
// decoded from YAML, and says which keys each job took from it, so that a bad default is
// reported once under defaults.KEY rather than once per job.
//
// The jobs of a table mostly inherit the same keys: each distinct set of inherited keys is kept
// once and shared, read-only, by the jobs that took it, instead of one set per job.
package inherit

import (
	"maps"
	"slices"
	"strings"
)

// blocks are the keys of `defaults` whose mappings merge key by key into a job's own block of
// the same name, and are reported as BLOCK.KEY.
var blocks = []string{"history", "notify"}

// Merger merges one `defaults` section into jobs. It is not safe for concurrent use.
type Merger struct {
	defaults map[string]any
	known    map[string]bool
	sets     map[string]map[string]bool // by the set's sorted keys
	keys     []string                   // the current job's, reused
}

// New returns a Merger of defaults into jobs; known are the keys a job may set (a key of
// defaults that is not is left for the decoder to report).
func New(defaults map[string]any, known map[string]bool) *Merger {
	return &Merger{defaults: defaults, known: known, sets: map[string]map[string]bool{}}
}

// Merge copies into item, a job's mapping, each key of the defaults that it does not set, and
// each key of a block default (history, notify) that its own block does not set, and returns
// the keys it copied: a set shared with every job that copied the same keys, never to be
// written to. A key given an empty value (`enabled:` and nothing after it) is not set, as it is
// under defaults and at the top level, where viper reads it so. An item that is not a mapping
// is left alone, and its set is nil.
func (m *Merger) Merge(item any) map[string]bool {
	job, ok := item.(map[string]any)
	if !ok {
		return nil
	}
	m.keys = m.keys[:0]
	for k, val := range m.defaults {
		if slices.Contains(blocks, k) {
			m.mergeBlock(job, k, val)
			continue
		}
		if !isSet(job, k) && m.known[k] {
			job[k] = val
			m.keys = append(m.keys, k)
		}
	}
	slices.Sort(m.keys)
	id := strings.Join(m.keys, "\x00")
	set, ok := m.sets[id]
	if !ok {
		set = make(map[string]bool, len(m.keys))
		for _, k := range m.keys {
			set[k] = true
		}
		m.sets[id] = set
	}
	return set
}

// mergeBlock fills the keys of job's block that it does not set from defaults, key by key.
func (m *Merger) mergeBlock(job map[string]any, block string, defaults any) {
	dh, ok := defaults.(map[string]any)
	if !ok {
		return
	}
	jh, set := job[block]
	if !set || jh == nil {
		job[block] = maps.Clone(dh)
		for k := range dh {
			m.keys = append(m.keys, block+"."+k)
		}
		return
	}
	own, ok := jh.(map[string]any)
	if !ok {
		return // the decoder reports a block that is not a mapping
	}
	for k, v := range dh {
		if !isSet(own, k) {
			own[k] = v
			m.keys = append(m.keys, block+"."+k)
		}
	}
}

// isSet reports whether m sets key k to a value: an empty one (YAML's null) sets nothing.
func isSet(m map[string]any, k string) bool {
	v, ok := m[k]
	return ok && v != nil
}
