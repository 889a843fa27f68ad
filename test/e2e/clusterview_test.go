package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// reportJob is a job of the replicas' table that the command line's older file lacks.
const reportJob = `  - name: report
    schedule: "@yearly"
    type: builtin
    builtin: stock
`

// clusterView runs the status and control commands with a file older than the replicas' (it
// lacks a job) and with one whose jobs are broken, against three replicas that serve HTTP:
// status shows the leader's table and names the job the file lacks, a broken job in the file
// stops no command, a job only the leader has can be triggered and its run read back, a
// mistyped job name is refused with the nearest one, and all of it holds after the leader is
// killed and another takes over.
func (s *suite) clusterView(t *testing.T) {
	w := workload{schedule: "@every 5s", every: 5 * time.Second, clients: 2, delay: 100 * time.Millisecond}
	d := s.deploy(t, deployOptions{jobs: w.yaml() + reportJob})
	for _, n := range nodes {
		r := d.replicas[n]
		b, err := os.ReadFile(r.config)
		if err != nil {
			t.Fatal(err)
		}
		body := strings.Replace(string(b), `http: {addr: ""}`, `http: {addr: "127.0.0.1:0"}`, 1)
		if err := os.WriteFile(r.config, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	older := d.cliVariant("older.yaml", w.yaml())
	broken := d.cliVariant("broken.yaml", "  - name: invoices\n    schedule: '61 * * * *'\n    type: builtin\n    builtin: invoices\n")
	d.startAll()
	first := d.waitLeader(0, 30*time.Second)
	tl := newTimeline(t, "ClusterView")
	tl.start(time.Now(), "three replicas serving HTTP; "+first.node+" leads")

	want := []string{invoicesJob, "report"}
	// The leader's HTTP address reaches status once its registry entry is written.
	shows := func(cfg, leader string) (viewDoc, bool) {
		code, out, errOut := d.run("status", "--json", "--config", cfg)
		if code != 0 {
			t.Fatalf("status --config %s: exit %d: %s", filepath.Base(cfg), code, errOut)
		}
		var doc viewDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("status --json: %v", err)
		}
		return doc, doc.Leader != nil && doc.Leader.Node == leader && slices.Equal(doc.names(), want)
	}
	var doc viewDoc
	testenv.Eventually(t, 30*time.Second, poll, "status with the older file to show the leader's table", func() bool {
		var ok bool
		doc, ok = shows(older, first.node)
		return ok
	})
	if !doc.warns("differs from the leader's", "only the leader has report") {
		t.Errorf("status warnings %q, want one naming report", doc.Warnings)
	}
	tl.mark(time.Now(), "status with the older file shows the leader's two jobs and names report")

	code, _, errOut := d.run("status", "--config", broken)
	if code != 0 || !strings.Contains(errOut, "jobs[0].schedule") {
		t.Fatalf("status with a broken job: exit %d, stderr %q; want 0 and a warning naming jobs[0].schedule", code, errOut)
	}
	if code, out, errOut := d.run("trigger", "report", "--config", broken); code != 0 {
		t.Fatalf("trigger report: exit %d: %s%s", code, out, errOut)
	}
	testenv.Eventually(t, 30*time.Second, poll, "the triggered run of report to succeed", func() bool {
		return d.succeeded("report", broken) == 1
	})
	tl.mark(time.Now(), "a broken job in the file stops nothing: report triggered and succeeded")

	code, _, errOut = d.run("pause", "reprot", "--config", older)
	if code != 2 || !strings.Contains(errOut, `did you mean "report"?`) {
		t.Fatalf("pause reprot: exit %d, stderr %q; want 2 and the nearest job", code, errOut)
	}

	killed := time.Now()
	d.replicas[first.node].proc.kill()
	next := d.waitLeader(first.token, 30*time.Second)
	testenv.Eventually(t, 30*time.Second, poll, "status to show the new leader's table", func() bool {
		var ok bool
		doc, ok = shows(older, next.node)
		return ok
	})
	tl.mark(time.Now(), "%s killed; %s leads (token %d) and status shows its table", first.node, next.node, next.token)
	tl.figure("from the kill to status showing the new leader's table", time.Since(killed).Round(time.Millisecond))
	if code, out, errOut := d.run("trigger", "report", "--config", older); code != 0 {
		t.Fatalf("trigger report after the failover: exit %d: %s%s", code, out, errOut)
	}
	testenv.Eventually(t, 30*time.Second, poll, "the second triggered run of report", func() bool {
		return d.succeeded("report", broken) == 2
	})
	tl.mark(time.Now(), "report, which the older file lacks, triggered through the new leader")
	tl.print()
	d.check(invoicesJob, w.clients)
}

// cliVariant writes a copy of the command line's configuration whose jobs section is jobs.
func (d *deployment) cliVariant(name, jobs string) string {
	d.t.Helper()
	b, err := os.ReadFile(d.cliCfg)
	if err != nil {
		d.t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(b), "\njobs:\n")
	if !ok {
		d.t.Fatalf("%s has no jobs section", d.cliCfg)
	}
	path := filepath.Join(d.dir, name)
	if err := os.WriteFile(path, []byte(head+"\njobs:\n"+jobs), 0o600); err != nil {
		d.t.Fatal(err)
	}
	return path
}

// run runs a command-line command and returns its exit status and output; args name the config.
func (d *deployment) run(args ...string) (code int, stdout, stderr string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.s.bins.scheduler, args...)
	cmd.Env = childEnv()
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		d.t.Fatalf("scheduler %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errOut.String()
}

// succeeded counts job's succeeded runs in `history --json`, read with the configuration cfg.
func (d *deployment) succeeded(job, cfg string) int {
	d.t.Helper()
	code, out, errOut := d.run("history", job, "--json", "--config", cfg)
	if code != 0 {
		d.t.Fatalf("history %s: exit %d: %s", job, code, errOut)
	}
	var runs []struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		d.t.Fatalf("history --json: %v", err)
	}
	n := 0
	for _, r := range runs {
		if r.Status == "succeeded" {
			n++
		}
	}
	return n
}

// viewDoc is the part of `status --json` the scenario reads.
type viewDoc struct {
	Leader *struct {
		Node string `json:"node"`
	} `json:"leader"`
	Warnings []string `json:"warnings"`
	Jobs     []struct {
		Name string `json:"name"`
	} `json:"jobs"`
}

func (v viewDoc) names() []string {
	var out []string
	for _, j := range v.Jobs {
		out = append(out, j.Name)
	}
	slices.Sort(out)
	return out
}

// warns reports whether one warning holds every part.
func (v viewDoc) warns(parts ...string) bool {
	return slices.ContainsFunc(v.Warnings, func(w string) bool {
		for _, p := range parts {
			if !strings.Contains(w, p) {
				return false
			}
		}
		return true
	})
}
