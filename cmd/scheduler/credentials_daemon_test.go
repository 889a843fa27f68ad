package main

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"scheduler/internal/testenv"
	"strings"
	"testing"

	"scheduler"
)

// TestDaemon_ScrubsJobCredentials: a job's own credentials in the configuration (an http job's
// Authorization and API-key headers, an API key in its URL's query, an exec job's API_KEY
// variable, a URL's password and the Basic credentials made of it) are stored, logged and shown
// nowhere: not when the receiver echoes its request, not in the error that quotes the URL of a
// receiver that is down, not when a program prints its variable, and not for a job a SIGHUP
// reload adds; on SQLite and on Postgres. Before, `history --json` and the unauthenticated
// /api/console showed them, and the daemon's log the URL's key.
func TestDaemon_ScrubsJobCredentials(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s\n", r.Method, r.URL)
		_ = r.Header.Write(w)
	}))
	defer echo.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	for _, store := range []struct{ name, dsn string }{{"SQLite", ""}, {"Postgres", testenv.MustDatabase(t)}} {
		t.Run(store.name, func(t *testing.T) { checkJobCredentials(t, store.dsn, echo.URL, down) })
	}
}

// checkJobCredentials runs TestDaemon_ScrubsJobCredentials's jobs on the store of dsn (SQLite
// when empty) against the echoing receiver at echo and the closed address down.
func checkJobCredentials(t *testing.T, dsn, echo, down string) {
	secrets := []string{"HEADER-SECRET-1", "KEY-SECRET-2", "QUERY-SECRET-3", "DOWN-SECRET-4", "ENV-SECRET-5", "BASIC-SECRET-7",
		base64.StdEncoding.EncodeToString([]byte("user:BASIC-SECRET-7"))}
	c := newBareCluster(t, dsn, fmt.Sprintf(`
jobs:
  - name: hook
    schedule: "* * * * * *"
    type: http
    url: "%s/x?api_key=QUERY-SECRET-3&page=2"
    headers: {Authorization: "Bearer HEADER-SECRET-1", X-Api-Key: "KEY-SECRET-2"}
    misfire: skip
  - name: basic
    schedule: "* * * * * *"
    type: http
    url: "%s"
    misfire: skip
  - name: down
    schedule: "* * * * * *"
    type: http
    url: "http://%s/x?access_token=DOWN-SECRET-4"
    misfire: skip
  - name: env
    schedule: "* * * * * *"
    type: exec
    env: {API_KEY: "ENV-SECRET-5"}
    command: [sh, -c, 'echo "key=$API_KEY"']
    misfire: skip
`, echo, strings.Replace(echo, "://", "://user:BASIC-SECRET-7@", 1), down))
	r := c.start("a")
	c.wait("a run of each job", func() bool {
		return countStatus(c.history("hook"), scheduler.StatusSucceeded) >= 1 && countStatus(c.history("down"), scheduler.StatusFailed) >= 1 &&
			countStatus(c.history("basic"), scheduler.StatusSucceeded) >= 1 &&
			countStatus(c.history("env"), scheduler.StatusSucceeded) >= 1
	})
	leaks := func(where, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Fatalf("%s shows %s:\n%.3000s", where, s, text)
			}
		}
	}
	for _, job := range []string{"hook", "basic", "down", "env"} {
		for _, run := range c.history(job) {
			leaks("history of "+job, run.Output+run.Error)
		}
	}
	if out := c.history("hook")[0].Output + c.history("env")[0].Output; strings.Count(out, "[redacted]") < 4 {
		t.Fatalf("outputs %q: want the echoed headers, the query and the variable [redacted]", out)
	}
	if err := c.history("down")[0].Error; !strings.Contains(err, "access_token=[redacted]") {
		t.Fatalf("the error of down %q does not quote its URL scrubbed", err)
	}
	leaks("history --json", c.cli("history", "hook", "--json"))
	leaks("status --json", c.cli("status", "--json"))
	_, console := httpGet(t, c.leaderAddr(c.status())+"/api/console")
	leaks("/api/console", console)

	// A job added by a reload is scrubbed of its own credentials from its first run.
	secrets = append(secrets, "ADDED-SECRET-6")
	c.editConfig(func(s string) string {
		return s + "  - name: added\n    schedule: \"* * * * * *\"\n    type: exec\n    env: {DB_PASSWORD: ADDED-SECRET-6}\n" +
			"    command: [sh, -c, 'echo \"pw=$DB_PASSWORD\"']\n    misfire: skip\n"
	})
	if err := syscallHUP(); err != nil {
		t.Fatal(err)
	}
	c.wait("a run of the added job", func() bool { return countStatus(c.history("added"), scheduler.StatusSucceeded) >= 1 })
	for _, run := range c.history("added") {
		leaks("history of added", run.Output)
	}
	leaks("the daemon's log", r.logs.String())
}
