package kinds

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// checker is a kind's configuration.
type checker interface{ Check() []Problem }

// TestCheck: each kind's Check is the one check of its settings, reporting every problem at its
// key relative to the job, in the words the configuration check prints.
func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		cfg  checker
		want []Problem
	}{
		{"ExecValid", ExecConfig{Command: []string{"/bin/true"}, Env: map[string]string{"A": "1"}, User: "nobody", Group: "nogroup"}, nil},
		{"ExecNoCommand", ExecConfig{}, []Problem{{"command", "is required for an exec job: the argv list, e.g. [/usr/bin/backup, --full]"}}},
		{"ExecBlankProgram", ExecConfig{Command: []string{" ", "x\x00"}}, []Problem{
			{"command[0]", "must name the program to run"},
			{"command[1]", "contains a NUL byte"},
		}},
		{"ExecEnv", ExecConfig{Command: []string{"true"}, Env: map[string]string{"A=B": "x", EnvJob: "j", "OK": "a\x00b"}}, []Problem{
			{"env", `invalid variable name "A=B"`},
			{"env.OK", "contains a NUL byte"},
			{"env.SCHEDULER_JOB", "set by the scheduler for each run"},
		}},
		{"ExecLongestStrings", ExecConfig{Command: []string{"true", strings.Repeat("a", 131071)}, Env: map[string]string{"A": strings.Repeat("v", 131069)}}, nil},
		{"ExecTooLongStrings", ExecConfig{Command: []string{"true", strings.Repeat("a", 131072)}, Env: map[string]string{"A": strings.Repeat("v", 131070)}}, []Problem{
			{"command[1]", "is 131072 bytes long: the kernel takes an argument of at most 131071"},
			{"env.A", "is 131072 bytes long with its name: the kernel takes a variable of at most 131071"},
		}},
		{"ExecDirNUL", ExecConfig{Command: []string{"true"}, Dir: "/tmp\x00x"}, []Problem{{"dir", "contains a NUL byte"}}},
		{"ExecUnknownUserAndGroup", ExecConfig{Command: []string{"true"}, User: "no-such-user-here", Group: "no-such-group-here"}, []Problem{
			{"user", `unknown user "no-such-user-here"`},
			{"group", `unknown group "no-such-group-here"`},
		}},
		{"HTTPValid", HTTPConfig{URL: "https://x/hook", Method: "PUT", Headers: map[string]string{"X-Api-Key": "k"}}, nil},
		{"HTTPNoURL", HTTPConfig{}, []Problem{{"url", "is required for an http job"}}},
		{"HTTPNotAbsolute", HTTPConfig{URL: "ftp://u:secret@x/y"}, []Problem{{"url", `must be an absolute http:// or https:// URL, got "ftp://u:xxxxx@x/y"`}}},
		{"HTTPMethod", HTTPConfig{URL: "http://x", Method: "FETCH"}, []Problem{{"method", `must be one of GET, POST, PUT, PATCH, DELETE; got "FETCH"`}}},
		{"HTTPHeaders", HTTPConfig{URL: "http://x", Headers: map[string]string{"Bad Name": "v", "Fencing-Token": "1", "X-A": "v\r\nX-B: w"}}, []Problem{
			{"headers", `invalid header name "Bad Name"`},
			{"headers.Fencing-Token", "set by the scheduler for each run"},
			{"headers.X-A", "value contains a line break or NUL"},
		}},
		{"SQLValid", SQLConfig{Statements: "SELECT 1; SELECT 2", Role: "nightly_job"}, nil},
		{"SQLNoStatements", SQLConfig{Statements: " \n"}, []Problem{{"sql", "is required for a sql job: the statements to run"}}},
		{"SQLNUL", SQLConfig{Statements: "SELECT 1;\x00DELETE FROM invoices"}, []Problem{{"sql", "contains a NUL byte"}}},
		{"SQLRoleInjection", SQLConfig{Statements: "SELECT 1", Role: `x"; DROP TABLE runs; --`}, []Problem{
			{"role", `must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 bytes), got "x\"; DROP TABLE runs; --"`},
		}},
		{"BuiltinValid", BuiltinConfig{Name: "invoices", Params: map[string]any{"clients": 3, "delay": "1s", "period": "slot"}}, nil},
		{"BuiltinMissing", BuiltinConfig{}, []Problem{{"builtin", "is required for a builtin job: one of invoices, stock"}}},
		{"BuiltinUnknown", BuiltinConfig{Name: "payroll"}, []Problem{{"builtin", `unknown builtin "payroll" (known: invoices, stock)`}}},
		{"BuiltinParams", BuiltinConfig{Name: "invoices", Params: map[string]any{"clients": -1, "colour": "red"}}, []Problem{
			{"params.clients", "must be a whole number from 1 to 10000000, got -1"},
			{"params.colour", "unknown parameter of builtin invoices (known: clients, delay, email_to, period)"},
		}},
		{"BuiltinNegativeDelay", BuiltinConfig{Name: "invoices", Params: map[string]any{"delay": "-1s"}}, []Problem{{"params.delay", "must not be negative, got -1s"}}},
		{"InvoicesParams", InvoicesParams{Clients: 0, Delay: -time.Second, Period: "week"}, []Problem{
			{"params.clients", "must be a whole number from 1 to 10000000, got 0"},
			{"params.delay", "must not be negative, got -1s"},
			{"params.period", "must be month or slot, got week"},
		}},
		{"StockTakesNoParams", BuiltinConfig{Name: "stock", Params: map[string]any{"x": 1}}, []Problem{{"params.x", "unknown parameter of builtin stock (it takes none)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.Check(); !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("Check() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestNew_RefusesWhatCheckRefuses: a constructor refuses exactly the problems of its Check, each
// one a Problem the caller can place under the job's key.
func TestNew_RefusesWhatCheckRefuses(t *testing.T) {
	cfg := ExecConfig{Env: map[string]string{EnvRunID: "1"}}
	_, err := NewExec(cfg)
	if err == nil {
		t.Fatal("NewExec accepted a config Check refuses")
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("err = %T, want the problems joined", err)
	}
	var got []Problem
	for _, e := range joined.Unwrap() {
		p, ok := e.(Problem)
		if !ok {
			t.Fatalf("%v is a %T, want a Problem", e, e)
		}
		got = append(got, p)
	}
	if want := cfg.Check(); !reflect.DeepEqual(got, want) {
		t.Fatalf("NewExec refused %q, want Check's %q", got, want)
	}
	if _, err := NewBuiltin(BuiltinConfig{Name: "stock"}, nil); err != nil {
		t.Fatalf("NewBuiltin(stock): %v", err)
	}
	if _, err := NewBuiltin(BuiltinConfig{Name: "payroll"}, nil); err == nil || err.Error() != `builtin: unknown builtin "payroll" (known: invoices, stock)` {
		t.Fatalf("NewBuiltin(payroll): err = %v, want the unknown builtin named", err)
	}
}
