// Package secretfile resolves the KEY_file form of the configuration's secret keys: a key such
// as store.dsn_file names a file whose content, without its trailing line break, becomes the
// value of store.dsn (systemd's LoadCredential= puts such files in $CREDENTIALS_DIRECTORY). A
// secret file is read the one safe way (filelimit) and its content is never quoted in an error.
package secretfile

import (
	"fmt"
	"path/filepath"
	"strings"

	"scheduler/cmd/scheduler/internal/config/internal/decode"
	"scheduler/cmd/scheduler/internal/config/internal/filelimit"
)

// Suffix turns a secret key into the key naming its file.
const Suffix = "_file"

// Problem is one KEY_file setting that could not be resolved: its key path and why.
type Problem struct {
	Key string
	Msg string
}

// Resolve replaces, for each of keys (dotted key paths such as store.dsn), the KEY_file setting
// of raw, the settings before decoding, by KEY set to the file's content without its trailing
// line break, read within limit. A relative path, from the file or a variable, is read from dir,
// the configuration file's directory, as every relative path of the configuration is. It removes
// the KEY_file settings, which the configuration's type does not hold.
func Resolve(raw map[string]any, dir string, keys []string, limit filelimit.Limit) []Problem {
	var problems []Problem
	for _, key := range keys {
		parent, leaf := settingParent(raw, key)
		if parent == nil {
			continue
		}
		fileKey := key + Suffix
		setting, ok := parent[leaf+Suffix]
		delete(parent, leaf+Suffix)
		if !ok || setting == nil || setting == "" {
			continue
		}
		path, ok := setting.(string)
		if !ok {
			problems = append(problems, Problem{Key: fileKey, Msg: fmt.Sprintf("must be a file path, not %s", decode.ValueKind(setting))})
			continue
		}
		if v, _ := parent[leaf].(string); v != "" {
			problems = append(problems, Problem{Key: fileKey, Msg: fmt.Sprintf("%s and %s are both set; set one of them", key, fileKey)})
			continue
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		data, err := filelimit.Read(path, limit)
		if err != nil {
			// The *PathError names the path; the content, a secret, is never quoted.
			problems = append(problems, Problem{Key: fileKey, Msg: fmt.Sprintf("cannot read the secret: %v", err)})
			continue
		}
		secret := strings.TrimRight(string(data), "\r\n")
		if secret == "" {
			problems = append(problems, Problem{Key: fileKey, Msg: fmt.Sprintf("%s is empty", path)})
			continue
		}
		parent[leaf] = secret
	}
	return problems
}

// settingParent returns the mapping of raw that holds the dotted key path, and the last element
// of the path; nil when a section on the way is missing or not a mapping.
func settingParent(raw map[string]any, key string) (map[string]any, string) {
	parts := strings.Split(key, ".")
	m := raw
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil, ""
		}
		m = next
	}
	return m, parts[len(parts)-1]
}
