package config

import (
	"errors"
	"os"
	"strings"
	"testing"

	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/internal/kinds"
)

func TestLoad_JobUserGroup(t *testing.T) {
	execJob := func(extra string) string {
		return "jobs:\n  - name: beat\n    schedule: \"@every 10s\"\n    type: exec\n    command: [/bin/true]\n" + extra
	}
	good := []struct{ name, yaml string }{
		{"Names", execJob("    user: nobody\n    group: nogroup\n")},
		{"Ids", execJob("    user: \"65534\"\n    group: \"0\"\n")},
		{"NumericYAML", execJob("    user: 65534\n")},
		{"FromDefaults", "defaults:\n  user: nobody\n" + execJob("")},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Load(configtest.Write(t, tc.yaml), nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	bad := []struct{ name, yaml, key, want string }{
		{"UnknownUser", execJob("    user: no-such-user-here\n"), "jobs[0].user", `unknown user "no-such-user-here"`},
		{"UnknownUserId", execJob("    user: \"4242424\"\n"), "jobs[0].user", `unknown user "4242424"`},
		{"UnknownGroup", execJob("    group: no-such-group-here\n"), "jobs[0].group", `unknown group "no-such-group-here"`},
		{"UnknownDefault", "defaults:\n  user: no-such-user-here\n" + execJob(""), "defaults.user", "unknown user"},
		{"NotExec", "jobs:\n  - name: hook\n    schedule: \"@every 10s\"\n    type: http\n    url: http://x/\n    user: nobody\n",
			"jobs[0].user", "only applies to jobs of type exec"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(configtest.Write(t, tc.yaml), nil)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err=%v, want a *Error", err)
			}
			var got []string
			for _, p := range ce.Problems {
				if p.Key == tc.key && strings.Contains(p.Msg, tc.want) {
					return
				}
				got = append(got, p.String())
			}
			t.Fatalf("problems %q, want %s: ...%s...", got, tc.key, tc.want)
		})
	}
	t.Run("DefaultReportedOnce", func(t *testing.T) {
		_, err := Load(configtest.Write(t, "defaults:\n  user: no-such-user-here\n"+execJob("")), nil)
		if n := strings.Count(err.Error(), "no-such-user-here"); n != 1 {
			t.Fatalf("the bad default is reported %d times, want once:\n%v", n, err)
		}
	})
}

// TestBuildTable_JobUser checks that a daemon running as root builds an exec job with a user;
// the refusal of an unprivileged daemon is checked end to end (test/e2e), as it needs one.
func TestBuildTable_JobUser(t *testing.T) {
	if kinds.CurrentUserSwitch().Check() != nil {
		t.Fatalf("this test runs as root (uid %d): it checks that a root daemon builds jobs with a user", os.Geteuid())
	}
	cfg, err := Load(configtest.Write(t, "jobs:\n  - name: beat\n    schedule: \"@every 10s\"\n    type: exec\n    command: [/bin/true]\n    user: nobody\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildTable(cfg, nil, []string{"PATH=/bin"}); err != nil {
		t.Fatalf("buildTable: %v", err)
	}
}
