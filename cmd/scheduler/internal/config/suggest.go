package config

import (
	"fmt"
	"reflect"
	"strings"
)

// Nearest returns the candidate nearest to name if it lies within a typo's distance, or "": the
// "did you mean" of a job name or a key.
func Nearest(name string, candidates []string) string { return closest(name, candidates) }

// unknownKeyMessage is the problem of an unknown key under parent (a key path, "" for the top
// level): the known key nearest to it, if one is near.
func unknownKeyMessage(parent, key string) string {
	if near := closest(key, keysAt(parent)); near != "" {
		return fmt.Sprintf("unknown key; did you mean %q?", near)
	}
	return "unknown key"
}

// keysAt returns the keys the configuration accepts under the key path parent (jobs[1],
// etcd.tls, defaults), from the struct tags; nil where any key goes (a map) or the path is
// not the configuration's.
func keysAt(parent string) []string {
	t := reflect.TypeFor[Config]()
	if parent != "" {
		for _, seg := range strings.Split(parent, ".") {
			name, _, _ := strings.Cut(seg, "[")
			f, ok := fieldByKey(t, name)
			if !ok {
				return nil
			}
			t = f.Type
			for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return structKeys(t)
}

// structKeys returns the keys of struct type t, those of its squashed fields included.
func structKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		switch {
		case opts == "squash":
			keys = append(keys, structKeys(f.Type)...)
		case name != "" && name != "-":
			keys = append(keys, name)
		}
	}
	return keys
}

// fieldByKey finds the field of struct type t whose key is key, in its squashed fields too.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if opts == "squash" {
			if sf, ok := fieldByKey(f.Type, key); ok {
				return sf, true
			}
			continue
		}
		if name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
