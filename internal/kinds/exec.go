package kinds

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	// EnvRunSecret is the run's secret (Attempt.Secret), set when the store gives one: a script
	// sets it as scheduler.run_secret before it calls outbox_enqueue.
	EnvRunSecret = "SCHEDULER_RUN_SECRET"
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
	// User and Group run the program as another user and group, by name or numeric id. With
	// User, the job gets the user's primary group (unless Group is set), its supplementary groups
	// and its HOME, USER and LOGNAME; with Group alone, the daemon's supplementary groups are
	// dropped. Empty: the daemon's. Switching needs root or CAP_SETUID and CAP_SETGID, and
	// stopping the job CAP_KILL: see UserSwitch, which the caller checks.
	User, Group string
}

// ExecJob runs a program, the exec job type.
//
// # Environment
//
// A job inherits only PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TZ and TMPDIR from
// the daemon (PATH defaults to /usr/local/bin:/usr/bin:/bin), then gets its own Env, then the run
// variables EnvFenceToken, EnvJob, EnvScheduledAt, EnvRunID and EnvAttempt, and EnvRunSecret on a
// store that gives one (Postgres). The secret never reaches the stored output: it is replaced
// there by [redacted]. Nothing else passes:
// the daemon's configuration, such as SCHEDULER_STORE_DSN or SCHEDULER_ETCD_PASSWORD, and the
// PG* variables its store driver reads, reach a job only when its own Env sets them.
//
// # Processes
//
// The program leads a new session, without a controlling terminal, and so a new process group;
// the run owns the whole group. When ctx is done the group gets SIGTERM, and SIGKILL once
// KillGrace has passed unless all of it has ended. When the program exits by itself, processes it
// left running in the group get the same treatment, so nothing of the group outlives the run; a
// process that leaves the group (setsid, setpgid) leaves the run: it is neither waited for nor
// stopped, and the job's overlap policy does not see it. Execute returns once the group is gone (a process stuck in an
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

// maxArgString is the most bytes, its terminating NUL included, that Linux's execve takes of one
// argument or one NAME=value string (MAX_ARG_STRLEN): past it every run fails with "argument
// list too long".
const maxArgString = 32 * 4096

// Check reports every problem of cfg, each at its key: the one check of an exec job's
// settings. It looks the user and group up, but does not ask whether this process may switch
// to them (UserSwitch).
func (cfg ExecConfig) Check() []Problem {
	var ps problems
	switch {
	case len(cfg.Command) == 0:
		ps.add("command", "is required for an exec job: the argv list, e.g. [/usr/bin/backup, --full]")
	case strings.TrimSpace(cfg.Command[0]) == "":
		ps.add("command[0]", "must name the program to run")
	}
	for i, a := range cfg.Command {
		switch {
		case strings.IndexByte(a, 0) >= 0:
			ps.add(fmt.Sprintf("command[%d]", i), "contains a NUL byte")
		case len(a) >= maxArgString:
			ps.add(fmt.Sprintf("command[%d]", i), fmt.Sprintf("is %d bytes long: the kernel takes an argument of at most %d", len(a), maxArgString-1))
		}
	}
	if strings.IndexByte(cfg.Dir, 0) >= 0 {
		ps.add("dir", "contains a NUL byte") // no directory has one: every run would fail
	}
	for _, k := range sortedNames(cfg.Env) {
		switch v := cfg.Env[k]; {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			ps.add("env", fmt.Sprintf("invalid variable name %q", k))
		case isRunVariable(k):
			ps.add("env."+k, "set by the scheduler for each run")
		case strings.IndexByte(v, 0) >= 0:
			ps.add("env."+k, "contains a NUL byte")
		case len(k)+1+len(v) >= maxArgString:
			ps.add("env."+k, fmt.Sprintf("is %d bytes long with its name: the kernel takes a variable of at most %d", len(k)+1+len(v), maxArgString-1))
		}
	}
	if cfg.User != "" {
		if _, err := lookupUser(cfg.User); err != nil {
			ps.add("user", err.Error())
		}
	}
	if cfg.Group != "" {
		if _, err := lookupGroup(cfg.Group); err != nil {
			ps.add("group", err.Error())
		}
	}
	if cfg.KillGrace < 0 {
		ps.add("kill grace", fmt.Sprintf("must not be negative, got %s", cfg.KillGrace))
	}
	if cfg.OutputLimit < 0 {
		ps.add("output limit", fmt.Sprintf("must not be negative, got %d", cfg.OutputLimit))
	}
	return ps
}

// NewExec checks cfg (Check) and returns the job. Every problem is reported, joined, each a
// Problem.
func NewExec(cfg ExecConfig) (*ExecJob, error) {
	if err := refusal(cfg.Check()); err != nil {
		return nil, err
	}
	id, err := resolveIdentity(cfg.User, cfg.Group)
	if err != nil {
		return nil, err
	}
	base := cfg.Environ
	if base == nil {
		base = os.Environ()
	}
	// By name, the variable as NAME=value: an inherited variable keeps the string it came in,
	// shared by every job of a table instead of built again for each.
	env := map[string]string{}
	for _, kv := range id.environ(base) {
		k, _, ok := strings.Cut(kv, "=")
		if ok && inheritedVar(k) {
			env[k] = kv
		}
	}
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = "PATH=" + defaultPath
	}
	for k, v := range cfg.Env {
		env[k] = k + "=" + v
	}
	j := &ExecJob{
		argv:  append([]string(nil), cfg.Command...),
		path:  strings.TrimPrefix(env["PATH"], "PATH="),
		dir:   cfg.Dir,
		grace: cfg.KillGrace,
		limit: cfg.OutputLimit,
	}
	if id != nil {
		j.cred = id.cred
	}
	if j.grace == 0 {
		j.grace = DefaultKillGrace
	}
	j.env = make([]string, 0, len(env))
	for _, k := range sortedNames(env) {
		j.env = append(j.env, env[k])
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
	secret, err := run.Secret(ctx)
	if err != nil {
		return "", fmt.Errorf("run %s: not started: %w", name, err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("run %s: output pipe: %w", name, err)
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   j.argv,
		Env:    j.environ(run, secret),
		Dir:    j.dir,
		Stdout: pw, // an *os.File: the child writes to it directly, no copying goroutine
		Stderr: pw,
		// A session of its own, not only a process group: a job in the daemon's session would
		// share its controlling terminal, and could open /dev/tty to read it or type into the
		// shell of whoever started the daemon (TIOCSTI), whatever user the job runs as.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Credential: j.cred},
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
	firstForOOM(pgid)
	defer trackGroup(pgid)()

	out := NewScrubbedCapture(j.limit, outputScrub(run))
	var sink io.Writer = out
	if run.Live != nil { // the run can be followed while it runs
		live, done := run.Live.Open(run.Job, run.RunID)
		defer done()
		sink = io.MultiWriter(out, live)
	}
	// The secret is the run's own, but the output is shown to whoever reads `status` or
	// follows the run.
	sink = newSecretFilter(sink, secretWords(secret))
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(sink, pr)
		if f, ok := sink.(*secretFilter); ok {
			_ = f.Flush()
		}
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
