package kinds

import (
	"context"
	"os"
	"strings"
	"testing"

	"scheduler"
)

// executeAsNobody runs cfg as the user nobody and returns its output; that needs root.
func executeAsNobody(t *testing.T, cfg ExecConfig) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("running a job as another user needs root; this test runs as uid %d", os.Geteuid())
	}
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	cfg.User = "nobody"
	j, err := NewExec(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := j.Execute(ctx, scheduler.Attempt{Job: "as-nobody", Slot: t0, Token: 1, Attempt: 1, RunID: "r"})
	if err != nil {
		t.Fatalf("Execute: %v\n%s", err, out)
	}
	return out
}

func TestExecJob_Credential(t *testing.T) {
	out := executeAsNobody(t, ExecConfig{
		Command: []string{"sh", "-c", "id -u; id -g; id -G"},
		Environ: []string{"PATH=/usr/bin:/bin"},
	})
	if got := strings.Fields(out); strings.Join(got, " ") != "65534 65534 65534" {
		t.Fatalf("uid, gid, groups = %q, want 65534 65534 65534 (the daemon's groups dropped)", out)
	}
}

// TestExecJob_UserEnvironment: a job run as another user gets that user's HOME, USER and LOGNAME
// in place of the daemon's, as cron and login give them.
func TestExecJob_UserEnvironment(t *testing.T) {
	out := executeAsNobody(t, ExecConfig{
		Command: []string{"sh", "-c", `echo "$HOME $USER $LOGNAME"`},
		Environ: []string{"PATH=/usr/bin:/bin", "HOME=/root", "USER=root", "LOGNAME=root"},
	})
	u, err := lookupUser("nobody")
	if err != nil {
		t.Fatal(err)
	}
	if want := u.HomeDir + " nobody nobody\n"; out != want {
		t.Fatalf("output %q, want %q", out, want)
	}
}
