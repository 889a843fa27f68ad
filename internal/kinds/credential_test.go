package kinds

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestResolveIdentity: an exec job's user and group become its process's credential and
// environment, or a refusal naming the key.
func TestResolveIdentity(t *testing.T) {
	root := UserSwitch{EUID: 0}
	type job struct{ usr, group string }
	// resolve is the daemon's check of its switcher, then what NewExec makes of the user and group.
	resolve := func(j job, s UserSwitch) (*identity, error) {
		if err := CheckSwitch(j.usr, j.group, s); err != nil {
			return nil, err
		}
		return resolveIdentity(j.usr, j.group)
	}

	t.Run("NoneSet", func(t *testing.T) {
		id, err := resolve(job{"", ""}, UserSwitch{EUID: 1000})
		if id != nil || err != nil {
			t.Fatalf("id=%v err=%v, want nothing to do", id, err)
		}
	})
	t.Run("User", func(t *testing.T) {
		id, err := resolve(job{"nobody", ""}, root)
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
		id, err := resolve(job{"65534", "0"}, root)
		if err != nil {
			t.Fatal(err)
		}
		if id.cred.Uid != 65534 || id.cred.Gid != 0 {
			t.Fatalf("credential %+v, want uid 65534 gid 0", id.cred)
		}
	})
	t.Run("GroupAloneClearsSupplementary", func(t *testing.T) {
		id, err := resolve(job{"", "nogroup"}, root)
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
		job      job
		switcher UserSwitch
		want     string
	}{
		{"Unprivileged", job{"nobody", ""}, UserSwitch{EUID: 1000}, "user: the daemon cannot switch users"},
		{"OnlySetuid", job{"", "nogroup"}, UserSwitch{EUID: 1000, Setuid: true}, "group: the daemon cannot switch users"},
		{"NoKill", job{"nobody", ""}, UserSwitch{EUID: 1000, Setuid: true, Setgid: true}, "user: the daemon cannot switch users"},
		{"Ambient", job{"nobody", ""}, UserSwitch{EUID: 1000, Setuid: true, Setgid: true, Kill: true, Ambient: true}, "user: the daemon holds CAP_SETUID, CAP_SETGID or CAP_KILL as ambient"},
		{"UnknownUser", job{"no-such-user-here", ""}, root, `user: unknown user "no-such-user-here"`},
		{"UnknownGroup", job{"", "no-such-group-here"}, root, `group: unknown group "no-such-group-here"`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolve(tc.job, tc.switcher)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err=%v, want %q", err, tc.want)
			}
		})
	}
	t.Run("CapabilitiesSuffice", func(t *testing.T) {
		if _, err := resolve(job{"nobody", ""}, UserSwitch{EUID: 1000, Setuid: true, Setgid: true, Kill: true}); err != nil {
			t.Fatal(err)
		}
	})
}
