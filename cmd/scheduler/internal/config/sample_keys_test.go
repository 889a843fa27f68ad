package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"scheduler/internal/kinds"
)

// samplePath is the annotated sample configuration.
var samplePath = filepath.Join("..", "..", "..", "..", "configs", "scheduler.yaml")

// TestSample_DocumentsEveryKey fails when the configuration accepts a key that the sample does
// not show, set or in a comment: the struct tags of Config, the KEY_file form of each secret
// and the parameters of each builtin are the keys accepted.
func TestSample_DocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	documented := sampleKeys(string(b))
	var missing []string
	for _, key := range acceptedKeys(t) {
		if !documented[key] {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s does not document %d accepted key(s) (a job key may be shown under jobs or defaults):\n  %s",
			samplePath, len(missing), strings.Join(missing, "\n  "))
	}
}

// acceptedKeys lists every key path the configuration accepts, a job's keys as jobs[].KEY.
func acceptedKeys(t *testing.T) []string {
	var keys []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
			if opts == "squash" {
				walk(prefix, f.Type)
				continue
			}
			if name == "" || name == "-" || prefix == "" && name == "defaults" {
				continue // defaults holds the job keys, which jobs[] lists
			}
			key := prefix + name
			ft := f.Type
			if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
				keys = append(keys, key)
				walk(key+"[].", ft.Elem())
				continue
			}
			keys = append(keys, key)
			if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Duration]() {
				walk(key+".", ft)
			}
		}
	}
	walk("", reflect.TypeFor[Config]())
	keys = append(keys, "defaults")
	for _, s := range secretKeys() {
		keys = append(keys, s.key+secretFileSuffix)
	}
	// The invoices builtin names its parameters when it meets one it does not know.
	_, errs := kinds.ParseInvoicesParams(map[string]any{"no_such_parameter": 1})
	known := regexp.MustCompile(`\(known: ([a-z_, ]+)\)`).FindStringSubmatch(fmtParamErrors(errs))
	if known == nil {
		t.Fatalf("the invoices builtin no longer lists its parameters: %v", errs)
	}
	for _, p := range strings.Split(known[1], ", ") {
		keys = append(keys, "jobs[].params."+p)
	}
	slices.Sort(keys)
	return keys
}

func fmtParamErrors(errs []kinds.ParamError) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error())
	}
	return b.String()
}

// sampleKey is a key at the start of a YAML line, as a list item or not, possibly commented out.
var sampleKey = regexp.MustCompile(`^( *)(- )?([a-z_][a-z0-9_]*):(\s|$)`)

// sampleKeys returns the key paths the sample shows, set or commented out (a commented line's
// indentation counts from its #), with defaults.KEY shown as jobs[].KEY too.
func sampleKeys(text string) map[string]bool {
	type level struct {
		indent int
		path   string
	}
	keys := map[string]bool{}
	var stack []level
	for _, line := range strings.Split(text, "\n") {
		body := line
		trimmed := strings.TrimLeft(line, " ")
		base := len(line) - len(trimmed)
		if strings.HasPrefix(trimmed, "#") {
			body = strings.Repeat(" ", base) + strings.TrimPrefix(strings.TrimPrefix(trimmed, "#"), " ")
		}
		m := sampleKey.FindStringSubmatch(body)
		if m == nil {
			continue
		}
		indent := len(m[1])
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		parent := ""
		if len(stack) > 0 {
			parent = stack[len(stack)-1].path
		}
		if m[2] != "" { // a list item: its keys sit under PARENT[], two columns in
			parent += "[]"
			stack = append(stack, level{indent, parent})
			indent += 2
		}
		path := m[3]
		if parent != "" {
			path = parent + "." + m[3]
		}
		keys[path] = true
		for _, flow := range regexp.MustCompile(`([a-z_]+): `).FindAllStringSubmatch(flowMapping(body), -1) {
			keys[path+"."+flow[1]] = true
		}
		if rest, ok := strings.CutPrefix(path, "defaults."); ok {
			keys["jobs[]."+rest] = true
		}
		stack = append(stack, level{indent, path})
	}
	return keys
}

// flowMapping returns the {...} value of a key's line, or "".
func flowMapping(line string) string {
	_, v, _ := strings.Cut(line, ": ")
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "{") {
		return ""
	}
	end := strings.Index(v, "}")
	if end < 0 {
		return ""
	}
	return v[1:end] + ","
}

// TestSample_CommentedJobsLoad uncomments the sample's commented-out jobs and loads the result:
// an example a reader uncomments must be valid as written.
func TestSample_CommentedJobsLoad(t *testing.T) {
	b, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in, found := false, 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "  # - name: ") {
			in = true
			found++
		} else if !strings.HasPrefix(line, "  #   ") && !strings.HasPrefix(line, "  #     ") {
			in = false
		}
		if in {
			line = "  " + strings.TrimPrefix(line, "  # ")
		}
		out = append(out, line)
	}
	if found < 2 {
		t.Fatalf("found %d commented jobs in the sample, want the sql and http examples", found)
	}
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatalf("the sample with its commented jobs uncommented: %v", err)
	}
	types := map[string]bool{}
	for _, j := range cfg.Jobs {
		types[j.Type] = true
	}
	for _, want := range []string{"builtin", "exec", "sql", "http"} {
		if !types[want] {
			t.Errorf("no %s job among %d jobs: the sample shows one of each kind", want, len(cfg.Jobs))
		}
	}
}
