package main

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestLoadConfig_JobUserGroup(t *testing.T) {
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
			if _, err := LoadConfig(writeConfig(t, tc.yaml), nil); err != nil {
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
			_, err := LoadConfig(writeConfig(t, tc.yaml), nil)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err=%v, want a *ConfigError", err)
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
		_, err := LoadConfig(writeConfig(t, "defaults:\n  user: no-such-user-here\n"+execJob("")), nil)
		if n := strings.Count(err.Error(), "no-such-user-here"); n != 1 {
			t.Fatalf("the bad default is reported %d times, want once:\n%v", n, err)
		}
	})
}

func TestResolveIdentity(t *testing.T) {
	root := userSwitch{euid: 0}
	job := func(usr, group string) Job { return Job{Name: "j", JobSpec: JobSpec{User: usr, Group: group}} }

	t.Run("NoneSet", func(t *testing.T) {
		id, err := resolveIdentity(job("", ""), userSwitch{euid: 1000})
		if id != nil || err != nil {
			t.Fatalf("id=%v err=%v, want nothing to do", id, err)
		}
	})
	t.Run("User", func(t *testing.T) {
		id, err := resolveIdentity(job("nobody", ""), root)
		if err != nil {
			t.Fatal(err)
		}
		u, err := lookupUser("nobody")
		if err != nil {
			t.Fatal(err)
		}
		if id.cred.Uid != 65534 || id.cred.Gid != 65534 {
			t.Fatalf("credential %+v, want nobody's uid and gid", id.cred)
		}
		gids, _ := u.GroupIds()
		if len(id.cred.Groups) != len(gids) {
			t.Fatalf("supplementary groups %v, want the user's %v", id.cred.Groups, gids)
		}
		env := id.environ([]string{"PATH=/bin", "HOME=/root", "USER=root", "LOGNAME=root"})
		want := []string{"PATH=/bin", "HOME=" + u.HomeDir, "USER=nobody", "LOGNAME=nobody"}
		if !reflect.DeepEqual(env, want) {
			t.Fatalf("environ=%q, want %q", env, want)
		}
	})
	t.Run("GroupOverridesPrimary", func(t *testing.T) {
		id, err := resolveIdentity(job("65534", "0"), root)
		if err != nil {
			t.Fatal(err)
		}
		if id.cred.Uid != 65534 || id.cred.Gid != 0 {
			t.Fatalf("credential %+v, want uid 65534 gid 0", id.cred)
		}
	})
	t.Run("GroupAloneClearsSupplementary", func(t *testing.T) {
		id, err := resolveIdentity(job("", "nogroup"), root)
		if err != nil {
			t.Fatal(err)
		}
		if id.cred.Uid != uint32(os.Getuid()) || id.cred.Gid != 65534 || len(id.cred.Groups) != 0 || id.cred.Groups == nil {
			t.Fatalf("credential %+v, want the daemon's uid, gid 65534, no supplementary groups", id.cred)
		}
		if got := id.environ([]string{"HOME=/root"}); !reflect.DeepEqual(got, []string{"HOME=/root"}) {
			t.Fatalf("environ=%q, want it unchanged", got)
		}
	})
	refused := []struct {
		name     string
		job      Job
		switcher userSwitch
		want     string
	}{
		{"Unprivileged", job("nobody", ""), userSwitch{euid: 1000}, "user: the daemon cannot switch users"},
		{"OnlySetuid", job("", "nogroup"), userSwitch{euid: 1000, setuid: true}, "group: the daemon cannot switch users"},
		{"NoKill", job("nobody", ""), userSwitch{euid: 1000, setuid: true, setgid: true}, "user: the daemon cannot switch users"},
		{"Ambient", job("nobody", ""), userSwitch{euid: 1000, setuid: true, setgid: true, kill: true, ambient: true}, "user: the daemon holds CAP_SETUID, CAP_SETGID or CAP_KILL as ambient"},
		{"UnknownUser", job("no-such-user-here", ""), root, `user: unknown user "no-such-user-here"`},
		{"UnknownGroup", job("", "no-such-group-here"), root, `group: unknown group "no-such-group-here"`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolveIdentity(tc.job, tc.switcher)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err=%v, want %q", err, tc.want)
			}
		})
	}
	t.Run("CapabilitiesSuffice", func(t *testing.T) {
		if _, err := resolveIdentity(job("nobody", ""), userSwitch{euid: 1000, setuid: true, setgid: true, kill: true}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBuildTable_JobUser checks that a daemon running as root builds an exec job with a user;
// the refusal of an unprivileged daemon is checked end to end (test/e2e), as it needs one.
func TestBuildTable_JobUser(t *testing.T) {
	if currentUserSwitch().check() != nil {
		t.Fatalf("this test runs as root (uid %d): it checks that a root daemon builds jobs with a user", os.Geteuid())
	}
	cfg, err := LoadConfig(writeConfig(t, "jobs:\n  - name: beat\n    schedule: \"@every 10s\"\n    type: exec\n    command: [/bin/true]\n    user: nobody\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildTable(cfg, nil, []string{"PATH=/bin"}); err != nil {
		t.Fatalf("buildTable: %v", err)
	}
}
