package kinds

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// identity is who an exec job runs as when it sets a user or group.
type identity struct {
	cred *syscall.Credential
	// env replaces HOME, USER and LOGNAME of the inherited environment with the user's, as
	// cron and login do; empty when only the group changes.
	env map[string]string
}

// lookupUser finds a user by name or numeric id.
func lookupUser(s string) (*user.User, error) {
	if _, err := strconv.ParseUint(s, 10, 32); err == nil {
		if u, err := user.LookupId(s); err == nil {
			return u, nil
		}
	}
	u, err := user.Lookup(s)
	if err != nil {
		return nil, fmt.Errorf("unknown user %q", s)
	}
	return u, nil
}

// lookupGroup finds a group by name or numeric id, and returns its id.
func lookupGroup(s string) (uint32, error) {
	if id, err := strconv.ParseUint(s, 10, 32); err == nil {
		if _, err := user.LookupGroupId(s); err == nil {
			return uint32(id), nil
		}
	}
	g, err := user.LookupGroup(s)
	if err != nil {
		return 0, fmt.Errorf("unknown group %q", s)
	}
	return parseID(g.Gid)
}

func parseID(s string) (uint32, error) {
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("id %q is not numeric", s)
	}
	return uint32(id), nil
}

// resolveIdentity turns an exec job's user and group, by name or id, into the credential its
// process gets; nil when the job sets neither. The Problem names the key at fault.
func resolveIdentity(usr, group string) (*identity, error) {
	if usr == "" && group == "" {
		return nil, nil
	}
	id := &identity{cred: &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Groups: []uint32{}}}
	if usr != "" {
		u, err := lookupUser(usr)
		if err != nil {
			return nil, Problem{"user", err.Error()}
		}
		bad := func(err error) error { return Problem{"user", fmt.Sprintf("user %q: %v", usr, err)} }
		if id.cred.Uid, err = parseID(u.Uid); err != nil {
			return nil, bad(err)
		}
		if id.cred.Gid, err = parseID(u.Gid); err != nil {
			return nil, bad(err)
		}
		// The user's own supplementary groups, as login gives them: files shared with a team
		// group stay readable, and nothing of the daemon's groups passes to the job.
		gids, err := u.GroupIds()
		if err != nil {
			return nil, bad(fmt.Errorf("groups: %w", err))
		}
		for _, g := range gids {
			gid, err := parseID(g)
			if err != nil {
				return nil, bad(fmt.Errorf("groups: %w", err))
			}
			id.cred.Groups = append(id.cred.Groups, gid)
		}
		id.env = map[string]string{"HOME": u.HomeDir, "USER": u.Username, "LOGNAME": u.Username}
	}
	if group != "" {
		gid, err := lookupGroup(group)
		if err != nil {
			return nil, Problem{"group", err.Error()}
		}
		id.cred.Gid = gid
	}
	return id, nil
}

// environ returns base with the identity's variables replacing the daemon's.
func (id *identity) environ(base []string) []string {
	if id == nil || len(id.env) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(id.env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := id.env[k]; !replaced {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"HOME", "USER", "LOGNAME"} {
		out = append(out, k+"="+id.env[k])
	}
	return out
}

// UserSwitch says whether a process may run an exec job as another user: its effective uid
// and capabilities. CurrentUserSwitch reads this process's.
type UserSwitch struct {
	// EUID is the effective user id.
	EUID int
	// Setuid, Setgid and Kill: CAP_SETUID, CAP_SETGID and CAP_KILL are effective. The last is
	// needed to stop a job of another user when its run is cancelled.
	Setuid, Setgid, Kill bool
	// Ambient: one of them is in the ambient set, which a job would keep across its exec.
	Ambient bool
}

// ErrCannotSwitchUsers says why a job's user or group cannot be applied.
var ErrCannotSwitchUsers = errors.New("the daemon cannot switch users: run it as root or grant it CAP_SETUID, CAP_SETGID and CAP_KILL")

// Check says why this process cannot run a job as another user or group; nil when it can.
// It is a property of the process, not of a job's configuration: the daemon checks it, while a
// configuration check may well run as another user.
func (s UserSwitch) Check() error {
	switch {
	case s.EUID == 0:
		return nil
	case !s.Setuid || !s.Setgid || !s.Kill:
		return fmt.Errorf("%w (it runs as uid %d without them)", ErrCannotSwitchUsers, s.EUID)
	case s.Ambient:
		// A non-root process keeps its capabilities across setuid, and ambient ones across exec:
		// the job could switch back to the daemon's user and read its secrets.
		return errors.New("the daemon holds CAP_SETUID, CAP_SETGID or CAP_KILL as ambient capabilities, which the job would inherit: grant them as file capabilities (setcap) or run the daemon as root")
	}
	return nil
}

// CheckSwitch says, naming the key (user, or group when only it is set), why switcher cannot
// run an exec job as usr and group; nil when it can, or when the job sets neither.
func CheckSwitch(usr, group string, switcher UserSwitch) error {
	if usr == "" && group == "" {
		return nil
	}
	key := "user"
	if usr == "" {
		key = "group"
	}
	if err := switcher.Check(); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}
