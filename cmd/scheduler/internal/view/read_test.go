package view

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"scheduler"
	"scheduler/internal/status"
)

// fakeSource is a Source of func fields.
type fakeSource struct {
	replicas func() ([]scheduler.Replica, error)
	election func() (status.Election, error)
}

func (f fakeSource) Replicas(context.Context) ([]scheduler.Replica, error) { return f.replicas() }
func (f fakeSource) Election(context.Context, []scheduler.Replica) (status.Election, error) {
	return f.election()
}

func leads(node string) func() (status.Election, error) {
	return func() (status.Election, error) {
		return status.Election{Leader: &status.Leader{Node: node, Token: 7}}, nil
	}
}

func registered(rs ...scheduler.Replica) func() ([]scheduler.Replica, error) {
	return func() ([]scheduler.Replica, error) { return rs, nil }
}

func TestRead(t *testing.T) {
	leaderJobs := []status.TableJob{{Name: "a", Digest: "1"}, {Name: "b", Digest: "2"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(status.TableDoc{Jobs: leaderJobs})
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	local := Local{Path: "local.yaml", Jobs: []status.TableJob{{Name: "a", Digest: "1"}}, Valid: true}
	broken := Local{Path: "local.yaml"}
	failed := func() ([]scheduler.Replica, error) { return nil, errors.New("etcd down") }
	for _, tc := range []struct {
		name     string
		src      fakeSource
		local    Local
		jobs     int // -1: not known
		from     string
		warnings []string // each the start of a warning, in order
	}{
		{"LeadersTable", fakeSource{registered(scheduler.Replica{Node: "n1", HTTPAddr: addr}), leads("n1")}, local,
			2, "the leader's table (node n1)", []string{"the table of local.yaml differs from the leader's (node n1): only the leader has b"}},
		{"SameTable", fakeSource{registered(scheduler.Replica{Node: "n1", HTTPAddr: addr}), leads("n1")}, Local{Path: "l", Jobs: leaderJobs, Valid: true},
			2, "the leader's table (node n1)", nil},
		{"LeadersTableBrokenFile", fakeSource{registered(scheduler.Replica{Node: "n1", HTTPAddr: addr}), leads("n1")}, broken,
			2, "the leader's table (node n1)", nil},
		{"NoLeader", fakeSource{registered(), func() (status.Election, error) { return status.Election{}, nil }}, local,
			1, "the table of local.yaml", nil},
		{"NoLeaderBrokenFile", fakeSource{registered(), func() (status.Election, error) { return status.Election{}, nil }}, broken,
			-1, "", []string{"no job table: the jobs of local.yaml are invalid"}},
		{"NoRegistryEntry", fakeSource{registered(scheduler.Replica{Node: "n2", HTTPAddr: addr}), leads("n1")}, local,
			1, "the table of local.yaml", []string{"cannot read the leader's table: the leader n1 has no registry entry; the jobs are those of local.yaml"}},
		{"NoHTTP", fakeSource{registered(scheduler.Replica{Node: "n1"}), leads("n1")}, local,
			1, "the table of local.yaml", []string{"cannot read the leader's table: the leader n1 serves no HTTP"}},
		{"ReplicasUnreadable", fakeSource{failed, leads("n1")}, local,
			1, "the table of local.yaml", []string{"cannot read the leader's table: read the replicas: etcd down"}},
		{"ElectionUnreadable", fakeSource{registered(), func() (status.Election, error) { return status.Election{}, errors.New("timeout") }}, broken,
			-1, "", []string{"cannot read the leader's table: read the leader: timeout; no job table"}},
		{"LeaderUnreachable", fakeSource{registered(scheduler.Replica{Node: "n1", HTTPAddr: "127.0.0.1:1"}), leads("n1")}, local,
			1, "the table of local.yaml", []string{"cannot read the leader's table: the leader n1: read its table"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Read(context.Background(), tc.src, tc.local)
			if tc.jobs < 0 {
				if got.Known || got.Check("zzz") != nil {
					t.Errorf("table %+v, want none known, judging nothing", got)
				}
			} else if !got.Known || len(got.Jobs) != tc.jobs || got.From != tc.from {
				t.Errorf("table %+v, want %d jobs from %q", got, tc.jobs, tc.from)
			}
			if len(got.Warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %q", got.Warnings, tc.warnings)
			}
			for i, w := range tc.warnings {
				if !strings.HasPrefix(got.Warnings[i], w) {
					t.Errorf("warning %q, want it to start with %q", got.Warnings[i], w)
				}
			}
		})
	}
}

func TestTable_Check(t *testing.T) {
	tbl := Table{Jobs: []status.TableJob{{Name: "invoices"}, {Name: "stock"}}, From: "the leader's table (node a)", Known: true}
	if err := tbl.Check("stock"); err != nil {
		t.Fatalf("Check(stock): %v", err)
	}
	err := tbl.Check("invoces")
	if want := `no job named "invoces" in the leader's table (node a); did you mean "invoices"?; its jobs: invoices, stock`; err == nil || err.Error() != want {
		t.Fatalf("Check(invoces)=%v, want %s", err, want)
	}
	if err := (Table{Known: true, From: "x"}).Check("a"); err == nil || !strings.HasSuffix(err.Error(), "it has no jobs") {
		t.Fatalf("Check on an empty table=%v", err)
	}
}
