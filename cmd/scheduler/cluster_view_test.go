package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/status"
	"scheduler/internal/testenv"
)

// thirdJob is a job the leader's table has and the CLI's older file lacks.
const thirdJob = `
  - name: third
    schedule: "@yearly"
    type: sql
    sql: "INSERT INTO stock_scans (sku, quantity) VALUES ('third', 1)"
`

// withJobs writes a copy of the configuration at path whose jobs section is jobs, beside it,
// and returns the copy's path. The copy finds the same cluster.
func withJobs(t *testing.T, path, name, jobs string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(b), "\njobs:")
	if !ok {
		t.Fatalf("%s has no jobs section", path)
	}
	out := filepath.Join(filepath.Dir(path), name)
	if err := os.WriteFile(out, []byte(head+"\n"+jobs), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCLI_ClusterView runs status, history, trigger, pause and resume with a file that lacks a
// job of the leader's table, and with one whose jobs are broken, on every coordinator backend
// and both stores: they show and judge by the leader's table, and warn about the file.
func TestCLI_ClusterView(t *testing.T) {
	clusters := map[string]func(t *testing.T) *cluster{
		"etcd/postgres": func(t *testing.T) *cluster { return newCluster(t, testenv.MustDatabase(t), thirdJob) },
		"etcd/sqlite":   func(t *testing.T) *cluster { return newCluster(t, "", thirdJob) },
		config.BackendPostgres: func(t *testing.T) *cluster {
			return backendWithThird(t, newBackendCluster(t, config.BackendPostgres, ""))
		},
		config.BackendZooKeeper: func(t *testing.T) *cluster {
			zk := fmt.Sprintf("zookeeper: {servers: [%s], session_timeout: 2s, path: /test/election}", testenv.MustZooKeeper(t).Addr())
			return backendWithThird(t, newBackendCluster(t, config.BackendZooKeeper, zk))
		},
		config.BackendRedis: func(t *testing.T) *cluster {
			redis := fmt.Sprintf("redis: {addr: %s, key: 'test:leader'}", testenv.MustRedis(t).Addr())
			return backendWithThird(t, newBackendCluster(t, config.BackendRedis, redis))
		},
	}
	for _, name := range []string{"etcd/postgres", "etcd/sqlite", config.BackendPostgres, config.BackendZooKeeper, config.BackendRedis} {
		t.Run(name, func(t *testing.T) {
			c := clusters[name](t)
			c.start("a")
			c.wait("a leader with its registry entry", func() bool {
				doc := c.status()
				return doc.Leader != nil && len(doc.Replicas) == 1
			})
			leaderTable := []string{"third", "tick", "yearly"}

			older := withJobs(t, c.path, "older.yaml", "jobs:"+testJobs[strings.Index(testJobs, "\n  - name: tick"):strings.Index(testJobs, "\n  - name: yearly")]+"\n")
			t.Run("StatusShowsTheLeadersTable", func(t *testing.T) {
				code, out, errOut := runCLI(t, "status", "--json", "--config", older)
				if code != 0 {
					t.Fatalf("status: exit %d: %s%s", code, out, errOut)
				}
				var doc status.Doc
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatal(err)
				}
				if got := docJobNames(doc); !slices.Equal(got, leaderTable) {
					t.Errorf("jobs=%v, want the leader's %v", got, leaderTable)
				}
				if !hasWarningWith(doc, "differs from the leader's", "only the leader has third, yearly") {
					t.Errorf("warnings=%q, want one naming third and yearly", doc.Warnings)
				}
			})

			broken := withJobs(t, c.path, "broken.yaml", "jobs:\n  - name: tick\n    schedule: '61 * * * *'\n    type: sql\n    sql: x\n")
			t.Run("BrokenJobsDoNotStopTheCommands", func(t *testing.T) {
				code, out, errOut := runCLI(t, "status", "--json", "--config", broken)
				if code != 0 || !strings.Contains(errOut, "jobs[0].schedule") || !strings.Contains(errOut, "warning") {
					t.Fatalf("status: exit %d, stderr %q; want 0 and a warning naming jobs[0].schedule", code, errOut)
				}
				var doc status.Doc
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatal(err)
				}
				if got := docJobNames(doc); !slices.Equal(got, leaderTable) {
					t.Errorf("jobs=%v, want the leader's %v", got, leaderTable)
				}
				for _, args := range [][]string{{"pause", "third"}, {"resume", "third"}, {"trigger", "third"}} {
					if code, out, errOut := runCLI(t, append(args, "--config", broken)...); code != 0 {
						t.Errorf("%v: exit %d: %s%s", args, code, out, errOut)
					}
				}
				c.wait("the triggered run of third", func() bool {
					code, out, _ := runCLI(t, "history", "third", "--json", "--config", broken)
					var runs []scheduler.Run
					return code == 0 && json.Unmarshal([]byte(out), &runs) == nil && countStatus(runs, scheduler.StatusSucceeded) == 1
				})
			})

			t.Run("UnknownJobIsJudgedByTheLeadersTable", func(t *testing.T) {
				for _, cmd := range []string{"trigger", "pause", "resume", "history"} {
					code, _, errOut := runCLI(t, cmd, "thrid", "--config", older)
					if code != 2 || !strings.Contains(errOut, `did you mean "third"?`) || !strings.Contains(errOut, "third, tick, yearly") {
						t.Errorf("%s thrid: exit %d, stderr %q; want 2, the nearest job and the leader's jobs", cmd, code, errOut)
					}
				}
			})
		})
	}
}

// backendWithThird adds thirdJob to the table of a backend cluster, before any replica starts.
func backendWithThird(t *testing.T, c *cluster) *cluster {
	t.Helper()
	b, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.path, append(b, thirdJob...), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

func docJobNames(doc status.Doc) []string {
	var names []string
	for _, j := range doc.Jobs {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	return names
}

func hasWarningWith(doc status.Doc, parts ...string) bool {
	return slices.ContainsFunc(doc.Warnings, func(w string) bool {
		for _, p := range parts {
			if !strings.Contains(w, p) {
				return false
			}
		}
		return true
	})
}
