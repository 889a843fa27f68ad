package main

import (
	"os"
	"strings"
	"testing"
)

// TestCLI_LeaderWithoutHTTP: a leader that serves no HTTP cannot give its table; the commands
// use the local file's and say why.
func TestCLI_LeaderWithoutHTTP(t *testing.T) {
	c := newCluster(t, "", "")
	b, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.path, []byte(strings.Replace(string(b), `http: {addr: "127.0.0.1:0"}`, `http: {addr: ""}`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	c.start("a")
	c.wait("a leader", func() bool { return c.status().Leader != nil })
	doc := c.status()
	if len(doc.Jobs) != 2 || !hasWarningWith(doc, "the leader a serves no HTTP", "the jobs are those of") {
		t.Fatalf("status: jobs %+v warnings %q; want the file's two jobs and why", doc.Jobs, doc.Warnings)
	}
	code, _, errOut := runCLI(t, "trigger", "nope", "--config", c.path)
	if code != 2 || !strings.Contains(errOut, "no job named \"nope\" in the table of") {
		t.Fatalf("trigger nope: exit %d, stderr %q; want 2, judged by the file", code, errOut)
	}
}
