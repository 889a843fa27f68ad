package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scheduler/internal/status"
	"scheduler/internal/testenv"
)

// consoleToken is the admin token of the console tests.
const consoleToken = "console-test-token-0123456789abcdef"

// withAdminToken writes consoleToken into a file of mode 0600 and configures c's replicas with
// it as http.admin_token_file, whose path it returns.
func withAdminToken(t *testing.T, c *cluster) string {
	t.Helper()
	token := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(token, []byte(consoleToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	const httpLine = `http: {addr: "127.0.0.1:0"}`
	if !strings.Contains(string(b), httpLine) {
		t.Fatalf("the test config has no line %q", httpLine)
	}
	b = []byte(strings.Replace(string(b), httpLine, `http: {addr: "127.0.0.1:0", admin_token_file: "`+token+`"}`, 1))
	if err := os.WriteFile(c.path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return token
}

// consoleServer serves the status server of a daemon built from c, not started: its actions
// write to the real control state, which nothing consumes.
func consoleServer(t *testing.T, c *cluster) (*daemon, *httptest.Server) {
	t.Helper()
	d := buildDaemon(t, c)
	s, err := d.newHTTP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Run(canceled()) })
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return d, srv
}

// post sends an action as the console's page does, changed by edit.
func post(t *testing.T, srv *httptest.Server, path string, edit func(h http.Header)) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+consoleToken)
	req.Header.Set(status.ConsoleHeader, "1")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if edit != nil {
		edit(req.Header)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// consoleAct sends an action to the console of the replica serving HTTP at addr, as its page
// does, with token, and returns the answer.
func consoleAct(t *testing.T, addr, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+addr+path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(status.ConsoleHeader, "1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// httpAddr waits for node's registry entry to name the address it serves HTTP on, and returns it.
func (c *cluster) httpAddr(node string) string {
	c.t.Helper()
	var addr string
	c.wait(node+" serves http", func() bool {
		for _, r := range c.status().Replicas {
			if r.Node == node {
				addr = r.HTTPAddr
			}
		}
		return addr != ""
	})
	return addr
}

func consoleDoc(t *testing.T, srv *httptest.Server) status.ConsoleDoc {
	t.Helper()
	code, body := httpGet(t, srv.URL+"/api/console")
	if code != http.StatusOK {
		t.Fatalf("/api/console=%d %s", code, body)
	}
	var doc status.ConsoleDoc
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("/api/console: %v: %s", err, body)
	}
	return doc
}

// TestConsole_Actions checks the console's actions against the real control state in etcd and
// a real store: refused without a configured token, without the console's header, from
// another origin, as a form post and with a wrong token; carried out and recorded with who
// and when otherwise.
func TestConsole_Actions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Run("ReadOnlyWithoutToken", func(t *testing.T) {
		d, srv := consoleServer(t, newCluster(t, "", ""))
		for _, action := range []string{"pause", "resume", "trigger"} {
			if code, body := post(t, srv, "/api/jobs/tick/"+action, nil); code != http.StatusNotFound || !strings.Contains(body, "read-only") {
				t.Errorf("%s without a configured token=%d %s, want 404 read-only", action, code, body)
			}
		}
		if doc := consoleDoc(t, srv); doc.Admin {
			t.Error("admin=true without a configured token")
		}
		assertUntouched(ctx, t, d)
	})
	forEachDaemonStore(t, "", func(t *testing.T, c *cluster) {
		withAdminToken(t, c)
		d, srv := consoleServer(t, c)
		for _, tc := range []struct {
			name string
			edit func(h http.Header)
			want int
		}{
			{"NoConsoleHeader", func(h http.Header) { h.Del(status.ConsoleHeader) }, http.StatusForbidden},
			{"FormPost", func(h http.Header) { h.Set("Content-Type", "application/x-www-form-urlencoded") }, http.StatusForbidden},
			{"TextPlain", func(h http.Header) { h.Set("Content-Type", "text/plain") }, http.StatusForbidden},
			{"CrossSite", func(h http.Header) { h.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden},
			{"OtherOrigin", func(h http.Header) { h.Del("Sec-Fetch-Site"); h.Set("Origin", "http://evil.example") }, http.StatusForbidden},
			{"NoToken", func(h http.Header) { h.Del("Authorization") }, http.StatusUnauthorized},
			{"WrongToken", func(h http.Header) { h.Set("Authorization", "Bearer not-the-token-0123456789") }, http.StatusUnauthorized},
			{"TokenPrefix", func(h http.Header) { h.Set("Authorization", "Bearer "+consoleToken[:20]) }, http.StatusUnauthorized},
			{"NotBearer", func(h http.Header) { h.Set("Authorization", "Basic "+consoleToken) }, http.StatusUnauthorized},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, action := range []string{"pause", "trigger"} {
					if code, body := post(t, srv, "/api/jobs/tick/"+action, tc.edit); code != tc.want {
						t.Errorf("%s=%d %s, want %d", action, code, body, tc.want)
					}
				}
				assertUntouched(ctx, t, d)
			})
		}
		t.Run("UnknownJobOrAction", func(t *testing.T) {
			for _, path := range []string{"/api/jobs/nope/pause", "/api/jobs/tick/delete"} {
				if code, body := post(t, srv, path, nil); code != http.StatusNotFound {
					t.Errorf("%s=%d %s, want 404", path, code, body)
				}
			}
			assertUntouched(ctx, t, d)
		})
		t.Run("PauseResumeTrigger", func(t *testing.T) {
			if doc := consoleDoc(t, srv); !doc.Admin {
				t.Fatal("admin=false with a configured token")
			}
			before := time.Now().UTC().Truncate(time.Second)
			if code, body := post(t, srv, "/api/jobs/tick/pause", nil); code != http.StatusOK || !strings.Contains(body, "tick paused") {
				t.Fatalf("pause=%d %s, want 200 tick paused", code, body)
			}
			ps, err := d.control.Paused(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := ps["tick"]; !ok || p.By != "console@127.0.0.1" || p.At.Before(before) {
				t.Fatalf("paused=%+v, want tick paused by console@127.0.0.1 at or after %s", ps, before)
			}
			if code, body := post(t, srv, "/api/jobs/tick/pause", nil); code != http.StatusOK || !strings.Contains(body, "already paused") {
				t.Fatalf("second pause=%d %s, want 200 already paused", code, body)
			}
			doc := consoleDoc(t, srv)
			if j := doc.Jobs[0]; j.Name != "tick" || !j.Paused || j.PausedBy == nil || j.PausedBy.By != "console@127.0.0.1" {
				t.Fatalf("console job %+v, want tick paused by console@127.0.0.1", j)
			}
			if code, body := post(t, srv, "/api/jobs/tick/resume", nil); code != http.StatusOK || !strings.Contains(body, "tick resumed") {
				t.Fatalf("resume=%d %s, want 200 tick resumed", code, body)
			}
			if ps, err := d.control.Paused(ctx); err != nil || len(ps) != 0 {
				t.Fatalf("paused=%v err=%v after resume, want none", ps, err)
			}
			if code, body := post(t, srv, "/api/jobs/yearly/trigger", nil); code != http.StatusOK || !strings.Contains(body, "yearly triggered") {
				t.Fatalf("trigger=%d %s, want 200 yearly triggered", code, body)
			}
			reqs, err := d.control.Requests(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != 1 || reqs[0].Job != "yearly" || reqs[0].By != "console@127.0.0.1" || reqs[0].At.Before(before) {
				t.Fatalf("trigger requests=%+v, want one for yearly by console@127.0.0.1", reqs)
			}
		})
	})
}

// assertUntouched fails t if the control state holds a pause or a trigger request.
func assertUntouched(ctx context.Context, t *testing.T, d *daemon) {
	t.Helper()
	ps, err := d.control.Paused(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := d.control.Requests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 0 || len(reqs) != 0 {
		t.Fatalf("control state changed by a refused action: paused %v, requests %v", ps, reqs)
	}
}

// TestConsole_AdminTokenFileRefused: a token file open to others stops `validate` and `run`
// with exit status 2, naming the key and the file.
func TestConsole_AdminTokenFileRefused(t *testing.T) {
	c := newCluster(t, "", "")
	withAdminToken(t, c)
	b, _ := os.ReadFile(c.path)
	i := strings.Index(string(b), "admin_token_file: \"")
	token := strings.SplitN(string(b)[i+len("admin_token_file: \""):], "\"", 2)[0]
	if err := os.Chmod(token, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"validate", "run"} {
		code, _, errOut := runCLI(t, cmd, "--config", c.path)
		if code != 2 || !strings.Contains(errOut, "http.admin_token_file") || !strings.Contains(errOut, token) || !strings.Contains(errOut, "0644") {
			t.Errorf("%s with a token file of mode 0644: exit %d, stderr %q; want 2 naming the key, the file and its mode", cmd, code, errOut)
		}
	}
}

// TestConsole_FollowerShowsCluster: the console of a follower shows the cluster's view, the
// leader from the coordinator and the leader's runs from the shared store. Only Postgres is
// shared: an SQLite deployment is a single node, whose data_dir a second replica cannot open.
func TestConsole_FollowerShowsCluster(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	lead := c.start("console-a")
	c.wait("console-a leads", func() bool {
		l := c.status().Leader
		return l != nil && l.Node == lead.node
	})
	follower := c.start("console-b")
	addr := c.httpAddr(follower.node)
	c.wait("console-b's console shows console-a leading and its runs of tick", func() bool {
		code, body := httpGet(t, "http://"+addr+"/api/console")
		var doc status.ConsoleDoc
		if code != http.StatusOK || json.Unmarshal([]byte(body), &doc) != nil {
			t.Fatalf("/api/console of console-b=%d %s", code, body)
		}
		if doc.Node != follower.node || doc.Leader == nil || doc.Leader.Node != lead.node || len(doc.Replicas) != 2 {
			return false
		}
		for _, j := range doc.Jobs {
			if j.Name == "tick" && len(j.Runs) > 0 && j.Runs[0].Node == lead.node && j.Runs[0].Status == "succeeded" {
				return true
			}
		}
		return false
	})
}

// TestConsole_FollowerActsOnTheLeadersTable: a follower's console checks an action's job
// against the leader's table, as the command line does: a job only in the follower's own file
// is refused with 404 naming the leader, and nothing is written for it; a job of the leader's
// table is acted on.
func TestConsole_FollowerActsOnTheLeadersTable(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	withAdminToken(t, c)
	lead := c.start("console-a")
	c.wait("console-a leads", func() bool {
		l := c.status().Leader
		return l != nil && l.Node == lead.node
	})
	c.writeConfig(testJobs + `
  - name: extra
    schedule: "@yearly"
    type: sql
    sql: "SELECT 1"
`)
	withAdminToken(t, c)
	follower := c.start("console-b")
	addr := c.httpAddr(follower.node)
	act := func(path string) (int, string) { return consoleAct(t, addr, path, consoleToken) }
	for _, action := range []string{"pause", "trigger"} {
		if code, body := act("/api/jobs/extra/" + action); code != http.StatusNotFound || !strings.Contains(body, "leader's table (node console-a)") {
			t.Errorf("%s of a job only in the follower's file=%d %s, want 404 naming the leader's table", action, code, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := buildDaemon(t, c)
	if ps, err := d.control.Paused(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("paused=%v err=%v, want none written for a job outside the leader's table", ps, err)
	}
	if code, body := act("/api/jobs/yearly/pause"); code != http.StatusOK || !strings.Contains(body, "yearly paused") {
		t.Fatalf("pause of a job of the leader's table on the follower=%d %s, want 200", code, body)
	}
}

// TestConsole_ReloadRotatesAdminToken: a SIGHUP after the admin token file was rewritten
// refuses the old token from the next request on and accepts the new one, without calling it a
// setting that needs a restart; a file emptied, which the reload refuses, keeps the token in force.
func TestConsole_ReloadRotatesAdminToken(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	file := withAdminToken(t, c)
	r := c.start("a")
	addr := c.httpAddr(r.node)
	act := func(token string) int {
		code, _ := consoleAct(t, addr, "/api/jobs/yearly/resume", token)
		return code
	}
	if code := act(consoleToken); code != http.StatusOK {
		t.Fatalf("the configured token=%d, want 200", code)
	}
	const rotated = "rotated-console-token-0123456789abcdef"
	if err := os.WriteFile(file, []byte(rotated+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscallHUP(); err != nil {
		t.Fatal(err)
	}
	c.wait("the token replaced", func() bool { return strings.Contains(r.logs.String(), "admin token replaced") })
	if code := act(consoleToken); code != http.StatusUnauthorized {
		t.Errorf("the old token after the reload=%d, want 401", code)
	}
	if code := act(rotated); code != http.StatusOK {
		t.Errorf("the new token after the reload=%d, want 200", code)
	}
	if strings.Contains(r.logs.String(), "changed settings apply only after a restart") {
		t.Errorf("the rotation was called a setting that needs a restart:\n%s", r.logs.String())
	}
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscallHUP(); err != nil {
		t.Fatal(err)
	}
	c.wait("the reload refused", func() bool { return strings.Contains(r.logs.String(), "reload rejected") })
	if code := act(rotated); code != http.StatusOK {
		t.Errorf("the token in force after a refused reload=%d, want 200", code)
	}
}
