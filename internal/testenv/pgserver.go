package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pgProcess is a running postmaster.
type pgProcess struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait returned
}

// startPostgres creates, initialises and starts a cluster.
func startPostgres(settings ...string) (*Postgres, error) {
	for _, s := range settings {
		if name, _, ok := strings.Cut(s, "="); !ok || name == "" {
			return nil, fmt.Errorf("postgres setting %q: want name=value", s)
		}
	}
	bin, err := findPostgres()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	// Not tb.TempDir: under root that is 0700 root-owned and the server
	// user could not enter it.
	dir, err := os.MkdirTemp("", "testenv-pg-")
	if err != nil {
		return nil, fmt.Errorf("create postgres directory: %w", err)
	}
	p := &Postgres{bin: bin, dir: dir, settings: settings, cred: cred}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("hand postgres directory %s to uid %d: %w", dir, cred.Uid, err)
		}
	}
	if err := p.initdb(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		err = p.start()
		if err == nil {
			return p, nil
		}
		if !isAddrInUse(err) || attempt == pgStartAttempts {
			break
		}
		p.port = 0
	}
	_ = p.destroy()
	return nil, err
}

// findPostgres returns the directory holding initdb and postgres: the one of
// postgres on PATH, else the newest /usr/lib/postgresql/<version>/bin.
func findPostgres() (string, error) {
	var dirs []string
	if path, err := exec.LookPath("postgres"); err == nil {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(versions, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(versions[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(versions[j])))
		return vi > vj
	})
	dirs = append(dirs, versions...)
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "postgres")) && isExecutable(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("postgres server binaries (initdb, postgres) not found on PATH or in /usr/lib/postgresql/*/bin; %s", pgInstallHint)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// serverCredential returns the identity the server runs as: nil (this
// process's user) unless running as root, which postgres refuses; then the
// postgres system user.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, the server must run as the postgres system user: %w; %s", err, pgInstallHint)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("uid %q of user postgres: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("gid %q of user postgres: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// command prepares one of the server programs to run as the server user, in
// its own process group, killed when this process dies.
func (p *Postgres) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: p.cred,
		// Own process group: a terminal's Ctrl-C reaches only the test
		// binary, whose death then takes the server down (Pdeathsig).
		Setpgid: true,
		// Set after the credential switch, so the kernel keeps it.
		Pdeathsig: syscall.SIGKILL,
	}
	// Keep the caller's PG* variables (PGDATA, PGPORT, ...) away from the
	// server, and keep locale warnings quiet.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "LC_ALL=C", "LANG=C")
	return cmd
}

// socketDir returns the directory for the server's unix socket: p.dir, or
// none ("") when the socket path would exceed the kernel's limit of 107
// bytes; TCP on loopback works either way.
func (p *Postgres) socketDir() string {
	if len(p.dir+"/.s.PGSQL.65535") > 107 {
		return ""
	}
	return p.dir
}

func (p *Postgres) dataDir() string { return filepath.Join(p.dir, "data") }
func (p *Postgres) logFile() string { return filepath.Join(p.dir, "postgres.log") }

// initdb creates the data directory.
func (p *Postgres) initdb() error {
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	cmd := p.command(ctx, "initdb", "-D", p.dataDir(), "-U", pgSuperuser, "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb in %s: %w\n%s", p.dir, err, out)
	}
	return nil
}

// start starts the postmaster (on a free port the first time, on the same
// port afterwards) and waits until it accepts connections.
func (p *Postgres) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc != nil {
		return errors.New("postgres is already running")
	}
	if p.port == 0 {
		addrs, err := FreePorts(1)
		if err != nil {
			return err
		}
		_, port, _ := net.SplitHostPort(addrs[0])
		p.port, _ = strconv.Atoi(port)
	}
	logf, err := os.OpenFile(p.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open postgres log: %w", err)
	}
	defer logf.Close()
	args := []string{"-D", p.dataDir(),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port=" + strconv.Itoa(p.port),
		"-c", "unix_socket_directories=" + p.socketDir(),
	}
	for _, s := range p.settings {
		args = append(args, "-c", s)
	}
	// Not bound to a context: the server outlives this call.
	cmd := p.command(context.Background(), "postgres", args...)
	// A file, not a pipe, so nothing waits for the server's output.
	cmd.Stdout, cmd.Stderr = logf, logf
	proc := &pgProcess{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		defer close(proc.exited)
		// The kernel sends the parent-death signal when the thread that
		// forked exits, not the process: keep that thread until the server
		// is gone.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			_ = cmd.Wait()
		}
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start postgres in %s: %w", p.dir, err)
	}
	if err := p.waitReady(proc); err != nil {
		proc.kill()
		return fmt.Errorf("postgres on port %d in %s: %w\n%s", p.port, p.dir, err, p.serverLog())
	}
	p.proc = proc
	return nil
}

// waitReady waits until the postmaster reports "ready" in postmaster.pid,
// which is what pg_ctl -w waits for too.
func (p *Postgres) waitReady(proc *pgProcess) error {
	pidFile := filepath.Join(p.dataDir(), "postmaster.pid")
	deadline := time.NewTimer(pgTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-proc.exited:
			if strings.Contains(p.serverLog(), "Address already in use") {
				return fmt.Errorf("exited: %w", syscall.EADDRINUSE)
			}
			return fmt.Errorf("exited during start-up: %v", proc.cmd.ProcessState)
		case <-deadline.C:
			return fmt.Errorf("not ready after %v", pgTimeout)
		case <-tick.C:
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) > 7 && lines[0] == strconv.Itoa(proc.cmd.Process.Pid) && strings.TrimSpace(lines[7]) == "ready" {
			return nil
		}
	}
}

// serverLog returns the end of the server log for error messages.
func (p *Postgres) serverLog() string {
	b, _ := os.ReadFile(p.logFile())
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// stop shuts the postmaster down with sig (SIGINT: fast, SIGQUIT:
// immediate), killing its process group if it does not exit in time.
func (p *Postgres) stop(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return nil
	}
	proc := p.proc
	p.proc = nil
	_ = proc.cmd.Process.Signal(sig)
	select {
	case <-proc.exited:
		return nil
	case <-time.After(pgTimeout):
	}
	proc.kill()
	return fmt.Errorf("postgres on port %d did not stop on %v within %v; killed", p.port, sig, pgTimeout)
}

// kill kills the postmaster and waits for it. Its children (each in its
// own session) notice the postmaster's death and exit by themselves.
func (proc *pgProcess) kill() {
	_ = proc.cmd.Process.Kill()
	<-proc.exited
}

// destroy stops the server (immediate shutdown) and removes its directory.
func (p *Postgres) destroy() error {
	err := p.stop(syscall.SIGQUIT)
	if rerr := os.RemoveAll(p.dir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("remove postgres directory: %w", rerr))
	}
	return err
}

// running reports whether the server is started.
func (p *Postgres) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc != nil
}

// LogLines returns the last n lines of the server's log that contain match (all lines when
// match is empty), for a failed test to show what the server saw: lock waits, sessions ended
// by a client's death, errors.
func (p *Postgres) LogLines(match string, n int) string {
	b, err := os.ReadFile(p.logFile())
	if err != nil {
		return fmt.Sprintf("(postgres log unreadable: %v)", err)
	}
	var keep []string
	for line := range strings.SplitSeq(strings.TrimRight(string(b), "\n"), "\n") {
		if strings.Contains(line, match) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep[max(0, len(keep)-n):], "\n")
}
