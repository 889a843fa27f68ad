package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// jobIdentity is who an exec job runs as when it sets user or group.
type jobIdentity struct {
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

// resolveIdentity turns a job's user and group into the credential its process gets; nil when
// the job sets neither. switcher says whether this process may change users; the error names
// the key at fault.
func resolveIdentity(j Job, switcher userSwitch) (*jobIdentity, error) {
	if err := checkSwitch(j, switcher); err != nil {
		return nil, err
	}
	return lookupIdentity(j)
}

// checkSwitch says, naming the key, why this process cannot run job j as the user or group it
// sets; nil when it can, or when j sets neither.
func checkSwitch(j Job, switcher userSwitch) error {
	if j.User == "" && j.Group == "" {
		return nil
	}
	key := "user"
	if j.User == "" {
		key = "group"
	}
	if err := switcher.check(); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// checkUserSwitch refuses a table with an exec job that this process could not run as the user
// or group the job sets, naming the first such job. It is the daemon's check, at start and on a
// reload: `validate` may well run as another user than the daemon.
func checkUserSwitch(cfg *Config, switcher userSwitch) error {
	for _, j := range cfg.Jobs {
		if j.Type != "exec" {
			continue
		}
		if err := checkSwitch(j, switcher); err != nil {
			return fmt.Errorf("job %q: %w", j.Name, err)
		}
	}
	return nil
}

// lookupIdentity resolves a job's user and group, by name or id, into the credential its
// process gets; nil when the job sets neither. The error names the key at fault.
func lookupIdentity(j Job) (*jobIdentity, error) {
	if j.User == "" && j.Group == "" {
		return nil, nil
	}
	id := &jobIdentity{cred: &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Groups: []uint32{}}}
	if j.User != "" {
		u, err := lookupUser(j.User)
		if err != nil {
			return nil, fmt.Errorf("user: %w", err)
		}
		if id.cred.Uid, err = parseID(u.Uid); err != nil {
			return nil, fmt.Errorf("user %q: %w", j.User, err)
		}
		if id.cred.Gid, err = parseID(u.Gid); err != nil {
			return nil, fmt.Errorf("user %q: %w", j.User, err)
		}
		// The user's own supplementary groups, as login gives them: files shared with a team
		// group stay readable, and nothing of the daemon's groups passes to the job.
		gids, err := u.GroupIds()
		if err != nil {
			return nil, fmt.Errorf("user %q: groups: %w", j.User, err)
		}
		for _, g := range gids {
			gid, err := parseID(g)
			if err != nil {
				return nil, fmt.Errorf("user %q: groups: %w", j.User, err)
			}
			id.cred.Groups = append(id.cred.Groups, gid)
		}
		id.env = map[string]string{"HOME": u.HomeDir, "USER": u.Username, "LOGNAME": u.Username}
	}
	if j.Group != "" {
		gid, err := lookupGroup(j.Group)
		if err != nil {
			return nil, fmt.Errorf("group: %w", err)
		}
		id.cred.Gid = gid
	}
	return id, nil
}

// environ returns base with the identity's variables replacing the daemon's.
func (id *jobIdentity) environ(base []string) []string {
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

// userSwitch reports whether this process may run a job as another user.
type userSwitch struct {
	euid int
	// setuid, setgid and kill: CAP_SETUID, CAP_SETGID and CAP_KILL are effective. The last is
	// needed to stop a job of another user when its run is cancelled.
	setuid, setgid, kill bool
	// ambient: one of them is in the ambient set, which a job would keep across its exec.
	ambient bool
}

// errCannotSwitchUsers says why a job's user or group cannot be applied.
var errCannotSwitchUsers = errors.New("the daemon cannot switch users: run it as root or grant it CAP_SETUID, CAP_SETGID and CAP_KILL")

func (s userSwitch) check() error {
	switch {
	case s.euid == 0:
		return nil
	case !s.setuid || !s.setgid || !s.kill:
		return fmt.Errorf("%w (it runs as uid %d without them)", errCannotSwitchUsers, s.euid)
	case s.ambient:
		// A non-root process keeps its capabilities across setuid, and ambient ones across exec:
		// the job could switch back to the daemon's user and read its secrets.
		return errors.New("the daemon holds CAP_SETUID, CAP_SETGID or CAP_KILL as ambient capabilities, which the job would inherit: grant them as file capabilities (setcap) or run the daemon as root")
	}
	return nil
}

// identitiesAsStrings lets user and group be written as bare numbers (user: 1001), which YAML
// reads as integers, in `defaults` and in every job of raw, the settings before decoding.
func identitiesAsStrings(raw map[string]any) {
	fix := func(m map[string]any) {
		for _, k := range []string{"user", "group"} {
			switch v := m[k].(type) {
			case int:
				m[k] = strconv.Itoa(v)
			case int64:
				m[k] = strconv.FormatInt(v, 10)
			case uint64:
				m[k] = strconv.FormatUint(v, 10)
			}
		}
	}
	if d, ok := raw["defaults"].(map[string]any); ok {
		fix(d)
	}
	list, _ := raw["jobs"].([]any)
	for _, item := range list {
		if job, ok := item.(map[string]any); ok {
			fix(job)
		}
	}
}
