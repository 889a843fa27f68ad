package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"scheduler"
)

// escapesJob prints what would act on a terminal: a window title, a screen clear, a C1 control
// sequence introducer.
const escapesJob = `
  - name: escapes
    schedule: "@yearly"
    type: exec
    command: [printf, '\033]0;owned\007\033[2J\302\233mplain\n']
  - name: bad-sql
    schedule: "@yearly"
    type: sql
    sql: "SELECT * FROM \"\e]0;owned\a\""
`

// TestLogs_TerminalEscapes: a job's output, printed by `scheduler logs` to a terminal, has its
// control characters shown as escapes rather than sent to the terminal; to a pipe it is printed
// as the ledger kept it. The errors in the table `history` prints are shown escaped too.
func TestLogs_TerminalEscapes(t *testing.T) {
	c := newCluster(t, "", escapesJob)
	c.start("a")
	c.wait("a leader", func() bool { return c.status().Leader != nil })
	c.cli("trigger", "escapes")
	c.wait("a run of escapes", func() bool { return countStatus(c.history("escapes"), scheduler.StatusSucceeded) == 1 })

	const kept = "\x1b]0;owned\x07\x1b[2J\u009bmplain\n"
	if out := c.cli("logs", "escapes"); out != kept {
		t.Fatalf("logs to a pipe = %q, want %q", out, kept)
	}
	got := logsOnTerminal(t, c.path, "escapes")
	if strings.ContainsAny(got, "\x1b\x07\u009b") {
		t.Fatalf("logs to a terminal = %q: control characters reach the terminal", got)
	}
	if want := `\x1b]0;owned\x07\x1b[2J\u009bmplain`; !strings.Contains(got, want) {
		t.Fatalf("logs to a terminal = %q, want it to show %q", got, want)
	}

	c.cli("trigger", "bad-sql")
	c.wait("a failed run of bad-sql", func() bool { return countStatus(c.history("bad-sql"), scheduler.StatusFailed) == 1 })
	if run := c.history("bad-sql")[0]; !strings.Contains(run.Error, "\x1b]0;owned\x07") {
		t.Fatalf("error %q: want the table's name in it, as the store said it", run.Error)
	}
	table := c.cli("history", "bad-sql")
	if strings.ContainsAny(table, "\x1b\x07") || !strings.Contains(table, `\x1b]0;owned\x07`) {
		t.Fatalf("history shows %q, want the error's control characters escaped", table)
	}
}

// logsOnTerminal runs `scheduler logs job` with its standard output a pseudo-terminal and
// returns what the terminal received.
func logsOnTerminal(t *testing.T, config, job string) string {
	t.Helper()
	ptmx, tty := mustPty(t)
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(ptmx) // ends with EIO once the terminal side is closed
		read <- b
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errOut bytes.Buffer
	runErr := run(ctx, []string{"logs", job, "--config", config}, nil, tty, &errOut)
	_ = tty.Close()
	if runErr != nil {
		t.Fatalf("logs %s: %v\n%s", job, runErr, errOut.String())
	}
	select {
	case b := <-read:
		return string(b)
	case <-ctx.Done():
		t.Fatal("the terminal's output did not end")
		return ""
	}
}

// mustPty opens a pseudo-terminal: its controlling side, and the terminal a program is given.
// The controlling side is closed at the end of the test.
func mustPty(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pseudo-terminal number: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal side: %v", err)
	}
	return ptmx, tty
}
