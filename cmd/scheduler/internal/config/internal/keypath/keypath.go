// Package keypath is the configuration's key paths: store.dsn, jobs[1].schedule. It joins and
// splits them, and walks a configuration type's fields by their mapstructure tags, the one walk
// that turns the type into the key paths a file or a variable may set.
package keypath

import (
	"reflect"
	"slices"
	"strings"
	"time"
)

// Join appends key to the key path prefix: store + dsn is store.dsn.
func Join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// Parent drops the last element of a key path: etcd.tls.ca_file -> etcd.tls,
// etcd.endpoints[0] -> etcd.endpoints.
func Parent(key string) string {
	if i := strings.LastIndexAny(key, ".["); i > 0 {
		return key[:i]
	}
	return ""
}

// Walk calls visit for every exported field of struct type t that a mapstructure tag names,
// with its key path under prefix (a squashed struct adds no name of its own) and its index for
// reflect.Value.FieldByIndex. A struct field (a time.Time aside) is walked into when visit
// returns true; every other field is a leaf.
func Walk(t reflect.Type, prefix string, index []int, visit func(key string, index []int, leaf bool) bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		if !f.IsExported() || tag == "" || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		at := append(slices.Clip(index), i)
		key := Join(prefix, name)
		if strings.Contains(opts, "squash") {
			key = prefix
		}
		if f.Type.Kind() != reflect.Struct || f.Type == reflect.TypeFor[time.Time]() {
			visit(key, at, true)
			continue
		}
		if visit(key, at, false) {
			Walk(f.Type, key, at, visit)
		}
	}
}

// Leaves lists the key paths of the settable leaves of struct type t.
func Leaves(t reflect.Type) []string {
	var keys []string
	Walk(t, "", nil, func(key string, _ []int, leaf bool) bool {
		if leaf {
			keys = append(keys, key)
		}
		return true
	})
	return keys
}
