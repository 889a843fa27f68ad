package kinds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"scheduler"
)

// The variables every exec job finds in its environment.
const (
	EnvFenceToken  = "SCHEDULER_FENCE_TOKEN"  // Run.Token, decimal
	EnvJob         = "SCHEDULER_JOB"          // Run.Job
	EnvScheduledAt = "SCHEDULER_SCHEDULED_AT" // Run.Slot, RFC 3339 in the slot's own time zone
	EnvRunID       = "SCHEDULER_RUN_ID"       // Run.RunID
	EnvAttempt     = "SCHEDULER_ATTEMPT"      // Run.Attempt, decimal
)

// DefaultKillGrace is how long an exec job's processes get between SIGTERM and SIGKILL when the
// job sets no grace.
const DefaultKillGrace = 10 * time.Second

// defaultPath is the PATH of a job whose inherited environment has none, as cron gives.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// killWait bounds the wait for a process group to vanish after SIGKILL.
const killWait = 5 * time.Second

// outputDrain bounds the wait for the last of the output once every process of the job's group
// has ended; only a process that left the group and kept the output open makes it matter.
const outputDrain = time.Second

// ExecConfig configures an exec job.
type ExecConfig struct {
	// Command is the program and its arguments, run without a shell. A program name without a
	// slash is looked up in the PATH of the job's environment (absolute entries only); a relative
	// path is taken relative to Dir. Required.
	Command []string
	// Env sets variables of the job's environment, over the inherited ones. It may not set the
	// run variables (EnvFenceToken and the rest).
	Env map[string]string
	// Dir is the working directory; empty: the daemon's.
	Dir string
	// KillGrace is how long the job's processes get between SIGTERM and SIGKILL when the run is
	// stopped. Default DefaultKillGrace.
	KillGrace time.Duration
	// Environ is the environment the job inherits from, before filtering; nil: the daemon's
	// (os.Environ at construction).
	Environ []string
	// OutputLimit is how many bytes of output are kept, head and tail. Default DefaultOutputLimit.
	OutputLimit int
	// Credential runs the program as another user and group, with the supplementary groups it
	// lists (an empty list clears them). nil: the daemon's. Switching needs root or CAP_SETUID
	// and CAP_SETGID, and stopping the job CAP_KILL; the caller checks that.
	Credential *syscall.Credential
}

// ExecJob runs a program, the exec job type.
//
// # Environment
//
// A job inherits only PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TZ and TMPDIR from
// the daemon (PATH defaults to /usr/local/bin:/usr/bin:/bin), then gets its own Env, then the run
// variables EnvFenceToken, EnvJob, EnvScheduledAt, EnvRunID and EnvAttempt. Nothing else passes:
// the daemon's configuration, such as SCHEDULER_STORE_DSN or SCHEDULER_ETCD_PASSWORD, and the
// PG* variables its store driver reads, reach a job only when its own Env sets them.
//
// # Processes
//
// The program leads a new process group, and the run owns the whole group. When ctx is done the
// group gets SIGTERM, and SIGKILL once KillGrace has passed unless all of it has ended. When the
// program exits by itself, processes it left running in the group get the same treatment, so
// nothing of a run outlives it; a program that means to leave a daemon behind must detach it into
// a session of its own (setsid). Execute returns once the group is gone (a process stuck in an
// uninterruptible wait is given up on 5s after SIGKILL); a killed process that nothing reaps yet
// (the daemon running as PID 1 without an init) counts as gone.
//
// # Result
//
// Exit status 0 is success. Standard output and standard error are captured together, through one
// pipe in the order written, bounded by OutputLimit. A program that cannot be found or executed is
// a scheduler.Permanent error naming it.
type ExecJob struct {
	argv  []string
	env   []string // inherited and Env, sorted; the run variables are added per run
	path  string   // PATH of the job's environment, for the program lookup
	dir   string
	grace time.Duration
	limit int
	cred  *syscall.Credential
}

// NewExec checks cfg and returns the job. Every problem is reported, joined.
func NewExec(cfg ExecConfig) (*ExecJob, error) {
	var errs []error
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		errs = append(errs, errors.New("command: a program is required"))
	}
	for i, a := range cfg.Command {
		if strings.IndexByte(a, 0) >= 0 {
			errs = append(errs, fmt.Errorf("command[%d]: contains a NUL byte", i))
		}
	}
	env := map[string]string{}
	base := cfg.Environ
	if base == nil {
		base = os.Environ()
	}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if ok && inheritedVar(k) {
			env[k] = v
		}
	}
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = defaultPath
	}
	for _, k := range sortedNames(cfg.Env) {
		v := cfg.Env[k]
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			errs = append(errs, fmt.Errorf("env: invalid variable name %q", k))
		case isRunVariable(k):
			errs = append(errs, fmt.Errorf("env.%s: set by the scheduler for each run", k))
		case strings.IndexByte(v, 0) >= 0:
			errs = append(errs, fmt.Errorf("env.%s: contains a NUL byte", k))
		default:
			env[k] = v
		}
	}
	if cfg.KillGrace < 0 {
		errs = append(errs, fmt.Errorf("kill grace: must not be negative, got %s", cfg.KillGrace))
	}
	if cfg.OutputLimit < 0 {
		errs = append(errs, fmt.Errorf("output limit: must not be negative, got %d", cfg.OutputLimit))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	j := &ExecJob{
		argv:  append([]string(nil), cfg.Command...),
		path:  env["PATH"],
		dir:   cfg.Dir,
		grace: cfg.KillGrace,
		limit: cfg.OutputLimit,
	}
	if c := cfg.Credential; c != nil {
		j.cred = &syscall.Credential{Uid: c.Uid, Gid: c.Gid, Groups: append([]uint32{}, c.Groups...)}
	}
	if j.grace == 0 {
		j.grace = DefaultKillGrace
	}
	for _, k := range sortedNames(env) {
		j.env = append(j.env, k+"="+env[k])
	}
	return j, nil
}

// Execute runs the program once for run; see ExecJob.
func (j *ExecJob) Execute(ctx context.Context, run scheduler.Attempt) (string, error) {
	name := j.argv[0]
	path, err := j.lookPath()
	if err != nil {
		return "", scheduler.Permanent(err)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("run %s: not started: %w", name, err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("run %s: output pipe: %w", name, err)
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        j.argv,
		Env:         j.environ(run),
		Dir:         j.dir,
		Stdout:      pw, // an *os.File: the child writes to it directly, no copying goroutine
		Stderr:      pw,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Credential: j.cred},
	}
	if err := cmd.Start(); err != nil {
		_ = pr.Close()
		_ = pw.Close()
		err = fmt.Errorf("run %s: %w", name, err)
		if permanentStartError(err) {
			return "", scheduler.Permanent(err)
		}
		return "", err
	}
	_ = pw.Close()
	pgid := cmd.Process.Pid

	out := NewCapture(j.limit)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, pr)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var waitErr error
	stopped := false
	select {
	case waitErr = <-exited:
		if groupAlive(pgid) {
			_ = j.terminate(pgid, nil) // the leader's status is waitErr already
		}
	case <-ctx.Done():
		stopped = true
		waitErr = j.terminate(pgid, exited)
	}

	select {
	case <-copied:
	default:
		_ = pr.SetReadDeadline(time.Now().Add(outputDrain))
		<-copied
	}
	_ = pr.Close()

	output := out.String()
	switch {
	case stopped:
		if waitErr == nil {
			return output, fmt.Errorf("run %s: stopped: %w", name, ctx.Err())
		}
		return output, fmt.Errorf("run %s: stopped: %w: %w", name, ctx.Err(), waitErr)
	case waitErr != nil:
		return output, fmt.Errorf("run %s: %w", name, waitErr)
	}
	return output, nil
}

// terminate ends process group pgid: SIGTERM, then SIGKILL once the grace has passed unless the
// leader and every other member have ended, then a wait of at most killWait for the killed to go.
// exited delivers the leader's Wait result; nil means the leader has been waited for already. It
// returns the leader's Wait result.
func (j *ExecJob) terminate(pgid int, exited <-chan error) error {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	grace := time.NewTimer(j.grace)
	defer grace.Stop()
	var waitErr error
	leaderDone := exited == nil
	if !leaderDone {
		select {
		case waitErr = <-exited:
			leaderDone = true
		case <-grace.C:
		}
	}
	if leaderDone && waitGroupGone(pgid, grace.C) {
		return waitErr
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if !leaderDone {
		waitErr = <-exited
	}
	// SIGKILL takes effect when each process next runs; only one stuck in an uninterruptible
	// wait (a hung network file system) outlasts killWait, and then nothing more can be done.
	killed := time.NewTimer(killWait)
	defer killed.Stop()
	waitGroupGone(pgid, killed.C)
	return waitErr
}

// waitGroupGone polls until no live process is left in group pgid (true) or deadline fires
// (false). The members are not children of this process, so they cannot be waited for.
func waitGroupGone(pgid int, deadline <-chan time.Time) bool {
	interval := 5 * time.Millisecond
	for groupAlive(pgid) {
		poll := time.NewTimer(interval)
		select {
		case <-deadline:
			poll.Stop()
			return false
		case <-poll.C:
		}
		interval = min(2*interval, 100*time.Millisecond)
	}
	return true
}

// groupAlive reports whether process group pgid has a member that has not exited. kill(-pgid, 0)
// also succeeds for zombies, which linger where nothing reaps orphans, so on a "yes" the members
// are looked up in /proc where it exists.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	live, known := liveMembers(pgid)
	return live || !known
}

// liveMembers scans /proc for a process of group pgid in a state other than zombie or dead.
// known is false when /proc cannot be read.
func liveMembers(pgid int) (live, known bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false, false
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// "pid (comm) state ppid pgrp ...": comm may hold anything, so split after its last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) >= 3 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			return true, true
		}
	}
	return false, true
}

// environ is the job's environment for run.
func (j *ExecJob) environ(run scheduler.Attempt) []string {
	env := make([]string, 0, len(j.env)+5)
	env = append(env, j.env...)
	return append(env,
		EnvFenceToken+"="+strconv.FormatInt(run.Token, 10),
		EnvJob+"="+run.Job,
		EnvScheduledAt+"="+run.Slot.Format(time.RFC3339),
		EnvRunID+"="+run.RunID,
		EnvAttempt+"="+strconv.Itoa(run.Attempt),
	)
}

// lookPath finds the program in the job's PATH rather than the daemon's, as a shell started with
// the job's environment would.
func (j *ExecJob) lookPath() (string, error) {
	name := j.argv[0]
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && j.dir != "" {
			p = filepath.Join(j.dir, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("program %s: %w", name, err)
		}
		return name, nil // relative to Dir: the child resolves it after its chdir
	}
	for _, d := range filepath.SplitList(j.path) {
		if !filepath.IsAbs(d) {
			continue // never run something from wherever the daemon happens to be
		}
		p := filepath.Join(d, name)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %s: not found in PATH %s", name, j.path)
}

// checkExecutable reports why p cannot be run, or nil.
func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return errors.New("is a directory")
	case fi.Mode()&0o111 == 0:
		return errors.New("not executable")
	}
	return nil
}

// permanentStartError reports whether starting failed for a reason a retry will meet again: a
// missing or unexecutable program, interpreter or working directory. Other failures (out of
// processes or memory) may pass.
func permanentStartError(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.ENOEXEC) || errors.Is(err, syscall.ENOTDIR)
}

// inheritedVar reports whether a job inherits the daemon's variable name.
func inheritedVar(name string) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// isRunVariable reports whether name is one of the variables set for each run.
func isRunVariable(name string) bool {
	switch name {
	case EnvFenceToken, EnvJob, EnvScheduledAt, EnvRunID, EnvAttempt:
		return true
	}
	return false
}

// sortedNames returns the keys of m in order, so that problems and variables come out stably.
func sortedNames(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
