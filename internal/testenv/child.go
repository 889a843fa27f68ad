package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// child is a server process started for a test: in its own process group,
// killed by the kernel when the test process dies, its output in a log file.
type child struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed once cmd.Wait returned
}

// startChild starts bin with args in dir, logging to dir/name.log.
func startChild(name, dir, bin string, args ...string) (*child, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	defer func() { _ = f.Close() }()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group: a terminal's Ctrl-C reaches only the test binary,
	// whose death then takes the server down (Pdeathsig).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		defer close(c.exited)
		_ = cmd.Wait()
	}()
	return c, nil
}

// waitReady polls addr with probe until it succeeds, the process exits or
// within passes.
func (c *child) waitReady(addr string, within time.Duration, probe func(net.Conn) error) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-c.exited:
			return fmt.Errorf("%s exited during start-up (%v): %s", c.name, c.cmd.ProcessState, c.tail())
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
			err = probe(conn)
			_ = conn.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	c.kill()
	return fmt.Errorf("%s on %s not ready after %v: %v: %s", c.name, addr, within, last, c.tail())
}

// stop sends sig and waits for the exit, killing the process after wait.
func (c *child) stop(sig syscall.Signal, wait time.Duration) error {
	if err := c.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", c.name, err)
	}
	select {
	case <-c.exited:
		return nil
	case <-time.After(wait):
		c.kill()
		return fmt.Errorf("%s did not exit within %v of %v; killed", c.name, wait, sig)
	}
}

// kill kills the process and waits for it.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.exited
}

// tail returns the end of the log, for error messages.
func (c *child) tail() string {
	b, err := os.ReadFile(c.log)
	if err != nil {
		return "(no log)"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// expectReply writes req to conn and checks that the reply starts with want.
func expectReply(conn net.Conn, req, want string) error {
	if _, err := conn.Write([]byte(req)); err != nil {
		return err
	}
	buf := make([]byte, len(want))
	n, err := conn.Read(buf)
	if err != nil {
		return err
	}
	if string(buf[:n]) != want {
		return fmt.Errorf("reply %q, want %q", buf[:n], want)
	}
	return nil
}
