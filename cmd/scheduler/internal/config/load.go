package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"scheduler/cmd/scheduler/internal/suggest"
	"scheduler/internal/notify"
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
	data, err := readBoundedFile(path, configLimit)
	if err != nil {
		return nil, []Problem{{Msg: readErrorMessage(err)}}
	}
	cfg, problems := decodeConfig(data, environ)
	if cfg == nil {
		return nil, problems
	}
	resolvePaths(cfg, filepath.Dir(path))
	// Validate even a partly decoded config, so one run reports every problem; a key that could
	// not be decoded is reported once, by the decoder.
	undecodable := map[string]bool{}
	for _, p := range problems {
		undecodable[p.Key] = true
	}
	for _, p := range cfg.Validate() {
		if !undecodable[p.Key] {
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
// problems met on the way. The Config is nil when the document is not YAML or not a mapping, and
// partly decoded when some values could not be.
func decodeConfig(data []byte, environ []string) (*Config, []Problem) {
	// The one parse of the file, by yaml.v3: it names the line of a syntax error and rejects
	// duplicate keys, which viper would let the last one win. Viper gets the parsed document.
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, []Problem{{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	file := map[string]any{}
	if doc != nil {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, []Problem{{Msg: "the document must be a mapping of keys to values"}}
		}
		if list, ok := m["jobs"].([]any); ok && len(list) > MaxJobs {
			return nil, []Problem{{Key: "jobs", Msg: fmt.Sprintf("%d jobs, more than the limit of %d", len(list), MaxJobs)}}
		}
		file = m
	}

	v := viper.New()
	v.SetConfigType("yaml")
	for k, val := range defaultSettings() {
		v.SetDefault(k, val)
	}
	setSecretFileDefaults(v.SetDefault)
	// Viper lower-cases the keys of what it is given in place; restoreEnvCase needs doc as
	// spelled, so viper gets a copy.
	if err := v.MergeConfigMap(copyTree(file).(map[string]any)); err != nil {
		return nil, []Problem{{Msg: err.Error()}}
	}
	// Environment overrides: viper's AutomaticEnv reads the process environment; reading a
	// given environ instead keeps tests hermetic and the rule identical.
	env := envMap(environ)
	fromEnv := map[string]string{} // key path -> the variable that set it
	for _, key := range envKeys(v.AllKeys()) {
		name := envName(key)
		if val, ok := env[name]; ok {
			v.Set(key, val)
			fromEnv[key] = name
		}
	}
	envProblems := unknownVariables(env, v.AllKeys())

	raw := v.AllSettings()
	problems := resolveSecretFiles(raw)
	problems = append(problems, restoreEnvCase(raw, doc)...)
	identitiesAsStrings(raw)
	if s, ok := raw["etcd"].(map[string]any); ok {
		if list, ok := s["endpoints"].(string); ok { // SCHEDULER_ETCD_ENDPOINTS=a:2379,b:2379
			s["endpoints"] = splitList(list)
		}
	}
	outboxListsFromEnv(raw)
	if d, ok := raw["defaults"].(map[string]any); ok {
		notify.SplitLists(d["notify"], splitList) // SCHEDULER_DEFAULTS_NOTIFY_EMAIL=a@x.test,b@x.test
	}
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
		problems = append(problems, decodeProblems(errors.Join(errs...))...)
	}
	if len(fromEnv) > 0 {
		cfg.fromEnv = fromEnv
	}
	problems = append(envProblems, problems...)
	cfg.historyFromTop = historyFromTop
	if cfg.Node == "" {
		host, err := os.Hostname()
		if err != nil {
			problems = append(problems, Problem{Key: "node", Msg: fmt.Sprintf("not set and the hostname is unknown: %v", err)})
		}
		cfg.Node = host
	}
	return &cfg, problems
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

func splitList(s string) []string {
	out := []string{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
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

var durationType = reflect.TypeFor[time.Duration]()

// durationHook parses duration strings and refuses bare numbers, which would otherwise be read
// as nanoseconds: "timeout: 30" is almost certainly not 30ns.
func durationHook(f, t reflect.Type, data any) (any, error) {
	if t != durationType {
		return data, nil
	}
	switch f.Kind() {
	case reflect.String:
		s := strings.TrimSpace(data.(string))
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration (use a unit, such as 30s, 5m or 2h)", s)
		}
		return d, nil
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64, reflect.Uint64:
		if reflect.ValueOf(data).IsZero() {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("%v has no unit (use a duration such as 30s, 5m or 2h)", data)
	}
	return data, nil
}

// scalarFromStringHook converts strings to the ints and bools they spell, as environment
// variables only carry strings (SCHEDULER_DEFAULTS_RETRIES=3).
func scalarFromStringHook(f, t reflect.Type, data any) (any, error) {
	if f.Kind() != reflect.String {
		return data, nil
	}
	s := strings.TrimSpace(data.(string))
	switch t.Kind() {
	case reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", s)
		}
		return n, nil
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", s)
		}
		return b, nil
	}
	return data, nil
}

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
				problems = append(problems, Problem{Key: joinKey(key, k), Msg: "unknown key" + suggest.DidYouMean(k, suggest.KeysAt(reflect.TypeFor[Config](), key))})
			}
			return
		}
		problems = append(problems, Problem{Key: key, Msg: decodeMessage(inner)})
	}
	walk(err, "")
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Key < problems[j].Key })
	return problems
}

func decodeMessage(err error) string {
	var ut *mapstructure.UnconvertibleTypeError
	if errors.As(err, &ut) {
		return fmt.Sprintf("must be %s, not %s", kindName(ut.Expected.Type()), valueKind(ut.Value))
	}
	return err.Error()
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Int:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	if t == durationType {
		return "a duration"
	}
	return t.String()
}

func valueKind(v any) string {
	switch v.(type) {
	case nil:
		return "empty"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("%v", v)
	}
	return fmt.Sprintf("%v", v)
}

func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
