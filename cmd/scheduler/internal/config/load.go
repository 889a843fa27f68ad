package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"scheduler/cmd/scheduler/internal/config/internal/decode"
	"scheduler/cmd/scheduler/internal/config/internal/document"
	"scheduler/cmd/scheduler/internal/config/internal/filelimit"
	"scheduler/cmd/scheduler/internal/config/internal/keycheck"
	"scheduler/cmd/scheduler/internal/config/internal/keypath"
	"scheduler/cmd/scheduler/internal/suggest"
)

// envPrefix prefixes every environment variable that overrides a config key.
const envPrefix = "SCHEDULER"

// Load reads the YAML file at path, applies SCHEDULER_* environment overrides from
// environ and the defaults, validates the result and builds every job as `run` does, connecting
// nowhere (see LoadTable). Any problem comes back as *Error listing every problem found,
// each naming its key path.
func Load(path string, environ []string) (*Config, error) {
	l, err := LoadTable(path, environ)
	if err != nil {
		return nil, err
	}
	return l.Config, nil
}

// checkConfig reads, decodes and validates the file at path: the config (nil when the file
// could not be read or is no mapping) and every problem found in it.
func checkConfig(path string, environ []string) (*Config, []Problem) {
	data, err := filelimit.Read(path, configLimit)
	if err != nil {
		return nil, []Problem{{Msg: readErrorMessage(err)}}
	}
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	cfg, problems := decodeConfig(data, environ, dir)
	if cfg == nil {
		return nil, problems
	}
	resolvePaths(cfg, dir)
	// Validate even a partly decoded config, so one run reports every problem; a key that could
	// not be decoded is reported once, by the decoder, and what is missing under a key removed
	// for its twin (Schedule beside schedule) is reported as that twin.
	undecodable := map[string]bool{}
	for _, p := range problems {
		undecodable[p.Key] = true
	}
	for _, p := range cfg.Validate() {
		if !undecodable[p.Key] && !slices.ContainsFunc(cfg.caseTwins, func(k string) bool { return underKey(p.Key, k) }) {
			problems = append(problems, p)
		}
	}
	return cfg, problems
}

func readErrorMessage(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "config file not found (pass --config FILE)"
	}
	return err.Error()
}

// decodeConfig turns YAML bytes plus environment into a Config with defaults applied, and the
// problems met on the way; dir is the configuration file's directory, which relative KEY_file
// paths are read from. The Config is nil when the document is not YAML or not a mapping, and
// partly decoded when some values could not be (or a key was refused: keycheck).
func decodeConfig(data []byte, environ []string, dir string) (*Config, []Problem) {
	// Viper gets the document parsed once (parseDocument).
	doc, msgs := document.Parse(data)
	if len(msgs) > 0 {
		problems := make([]Problem, len(msgs))
		for i, m := range msgs {
			problems[i] = Problem{Msg: m}
		}
		return nil, problems
	}
	// A file that sets nothing is refused, and the environment still checked.
	file, fileProblems := map[string]any{}, []Problem{{Msg: document.Empty}}
	var keyProblems []Problem
	var twins []string
	if doc != nil {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, []Problem{{Msg: "the document must be a mapping of keys to values"}}
		}
		// Any spelling of jobs is jobs to viper, and the limit counts them all (two spellings are
		// refused below), before anything walks the jobs.
		n := 0
		for k, v := range m {
			if list, ok := v.([]any); ok && strings.ToLower(k) == "jobs" {
				n += len(list)
			}
		}
		if n > MaxJobs {
			return nil, []Problem{{Key: "jobs", Msg: fmt.Sprintf("%d jobs, more than the limit of %d", n, MaxJobs)}}
		}
		kp := keycheck.Check(m)
		file, fileProblems, twins = m, nil, kp.Twins
		for _, p := range kp.Problems {
			keyProblems = append(keyProblems, Problem(p))
		}
	}

	// Viper's key paths are joined with keyDelim rather than its dot, which would split the
	// names of defaults.env and defaults.headers that hold one.
	v := viper.NewWithOptions(viper.KeyDelimiter(keyDelim))
	v.SetConfigType("yaml")
	for k, val := range defaultSettings() {
		v.SetDefault(viperKey(k), val)
	}
	setSecretFileDefaults(func(k string, val any) { v.SetDefault(viperKey(k), val) })
	// Viper lower-cases the keys of what it is given in place; restoreEnvCase needs doc as
	// spelled, so viper gets a copy.
	if err := v.MergeConfigMap(copyTree(file).(map[string]any)); err != nil {
		return nil, []Problem{{Msg: err.Error()}}
	}
	// Environment overrides: viper's AutomaticEnv reads the process environment; reading a
	// given environ instead keeps tests hermetic and the rule identical.
	env := envMap(environ)
	settings := map[string]string{} // key path, dotted -> viper's key
	for _, k := range v.AllKeys() {
		settings[strings.ReplaceAll(k, keyDelim, ".")] = k
	}
	fromEnv := map[string]string{} // key path -> the variable that set it
	for _, key := range envKeys(slices.Collect(maps.Keys(settings))) {
		name := envName(key)
		if val, ok := env[name]; ok {
			vk, ok := settings[key]
			if !ok {
				vk = viperKey(key) // a leaf of the Config type, whose key path holds no name
			}
			v.Set(vk, val)
			fromEnv[key] = name
		}
	}
	envProblems := unknownVariables(env, slices.Collect(maps.Keys(settings)))

	raw := v.AllSettings()
	problems := append(keyProblems, resolveSecretFiles(raw, dir)...)
	problems = append(problems, restoreEnvCase(raw, doc)...)
	identitiesAsStrings(raw)
	problems = append(problems, splitLists(raw, fromEnv)...)
	historyFromTop := inheritHistory(raw)
	defaults, defaultProblems := jobDefaults(raw)

	var cfg Config
	dec, err := newDecoder(&cfg)
	if err != nil {
		return nil, []Problem{{Msg: err.Error()}}
	}
	// The jobs are decoded one at a time (decodeJobs).
	list, perJob := raw["jobs"].([]any)
	if perJob {
		delete(raw, "jobs")
	}
	var errs []error
	if err := dec.Decode(raw); err != nil {
		errs = append(errs, err)
	}
	if perJob {
		jobProblems, jobErrs, err := decodeJobs(&cfg, list, defaults)
		if err != nil {
			return nil, []Problem{{Msg: err.Error()}}
		}
		defaultProblems, errs = append(defaultProblems, jobProblems...), append(errs, jobErrs...)
	}
	problems = append(problems, defaultProblems...)
	if len(errs) > 0 {
		problems = append(problems, slices.DeleteFunc(decodeProblems(errors.Join(errs...)), func(p Problem) bool {
			return inheritedKey(&cfg, historyFromTop, p)
		})...)
	}
	if len(fromEnv) > 0 {
		cfg.fromEnv = fromEnv
	}
	problems = append(append(fileProblems, envProblems...), problems...)
	cfg.historyFromTop = historyFromTop
	cfg.caseTwins = twins
	if cfg.Node == "" {
		host, err := os.Hostname()
		if err != nil {
			problems = append(problems, Problem{Key: "node", Msg: fmt.Sprintf("not set and the hostname is unknown: %v", err)})
		}
		cfg.Node = host
	}
	return &cfg, problems
}

// keyDelim joins the elements of a key path inside viper. Keys hold no dot (keycheck), but
// the names of a defaults.env or defaults.headers mapping may, and viper's own delimiter, a dot,
// would read such a name as a path into nested mappings. No variable or header name may hold a
// NUL byte, and a key holding one is unknown: splitting there changes nothing that is accepted.
const keyDelim = "\x00"

// viperKey is the key path k, dotted, as viper's key: k is a leaf of the Config type or a
// default setting, whose elements hold no dot.
func viperKey(k string) string { return strings.ReplaceAll(k, ".", keyDelim) }

// lowerLookup returns the value of m under the key that lower-cases to key, as viper reads keys;
// nil when there is none.
func lowerLookup(m map[string]any, key string) any {
	if v, ok := m[key]; ok {
		return v
	}
	for k, v := range m {
		if strings.ToLower(k) == key {
			return v
		}
	}
	return nil
}

// copyTree copies the mappings and lists of a parsed YAML document, sharing only its scalars.
func copyTree(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = copyTree(e)
		}
		return m
	case map[any]any:
		m := make(map[any]any, len(t))
		for k, e := range t {
			m[k] = copyTree(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = copyTree(e)
		}
		return l
	}
	return v
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string)
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, envPrefix+"_") {
			m[k] = v
		}
	}
	return m
}

// jobKeys is the set of keys a job (and `defaults`) may set, from the struct tags.
func jobKeys() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[JobSpec]()
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("mapstructure"); tag != "" {
			keys[strings.Split(tag, ",")[0]] = true
		}
	}
	return keys
}

// unknownKey begins the message of a key the Config type does not have.
const unknownKey = "unknown key"

// decodeProblems flattens the decoder's joined errors into one problem per key.
func decodeProblems(err error) []Problem {
	var problems []Problem
	var walk func(error, string)
	walk = func(err error, prefix string) {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				walk(e, prefix)
			}
			return
		}
		if je, ok := err.(*jobDecodeError); ok {
			walk(je.err, fmt.Sprintf("jobs[%d]", je.index))
			return
		}
		de, ok := err.(*mapstructure.DecodeError)
		if !ok {
			if inner := errors.Unwrap(err); inner != nil {
				walk(inner, prefix)
			} else {
				problems = append(problems, Problem{Msg: err.Error()})
			}
			return
		}
		key, inner := de.Name(), de.Unwrap()
		switch {
		case prefix != "" && key == "":
			key = prefix
		case prefix != "":
			key = prefix + "." + key
		}
		if msg := inner.Error(); strings.HasPrefix(msg, "has invalid keys: ") {
			for _, k := range strings.Split(strings.TrimPrefix(msg, "has invalid keys: "), ", ") {
				problems = append(problems, Problem{Key: keypath.Join(key, k), Msg: unknownKey + suggest.DidYouMean(k, suggest.KeysAt(reflect.TypeFor[Config](), key))})
			}
			return
		}
		problems = append(problems, Problem{Key: key, Msg: decode.Message(inner)})
	}
	walk(err, "")
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Key < problems[j].Key })
	return problems
}
