package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/status"
)

// The commands' view of the cluster is the leader's table, read from the /table of the HTTP
// server its registry entry names. A registry value of etcd holds at most a megabyte or so, too
// little for the names of the largest table; the HTTP server has no such bound and serves the
// table from memory.

// tableTimeout bounds the read of the leader's table. The leader serves it from memory; the
// bound leaves room for the largest table over a slow link.
const tableTimeout = 30 * time.Second

// maxTableBytes bounds the leader's answer, which the command holds in memory: the largest
// table's document is well below it.
const maxTableBytes = 256 << 20

// tableJobName is a job name as the configuration allows it; a table that holds another is not
// the leader's (a registry entry anyone with access to the coordinator can write names the server).
var tableJobName = regexp.MustCompile(`^[a-z0-9_-]+$`)

// clusterTable is the table a command judges a job by and status shows: the leader's, or, when
// it cannot be read, the local file's.
type clusterTable struct {
	jobs []status.TableJob
	// from says whose table it is, for messages: "the leader's table (node a)" or "the table of FILE".
	from string
	// known is false when neither table could be read: no job name can be judged.
	known bool
	// warnings say why the table is not the leader's, or how the local file's differs from it.
	warnings []string
}

// table reads the cluster's table: the leader's when a leader leads and serves it, else the
// local file's if it is valid.
func (s *session) table(ctx context.Context) clusterTable {
	var t clusterTable
	jobs, node, err := s.leaderTable(ctx)
	switch {
	case err == nil:
		t = clusterTable{jobs: jobs, from: fmt.Sprintf("the leader's table (node %s)", node), known: true}
		if s.localValid {
			if diff := tableDiff(s.localJobs(), jobs); diff != "" {
				t.warnings = append(t.warnings, fmt.Sprintf("the table of %s differs from the leader's (node %s): %s; the leader's is used", s.path, node, diff))
			}
		}
		return t
	case errors.Is(err, errNoLeader):
		// Collect says that no replica leads.
	default:
		t.warnings = append(t.warnings, fmt.Sprintf("cannot read the leader's table: %v", err))
	}
	if !s.localValid {
		t.warnings = append(t.warnings, fmt.Sprintf("no job table: the leader's cannot be read and the jobs of %s are invalid (see `scheduler validate`)", s.path))
		return t
	}
	if err != nil && !errors.Is(err, errNoLeader) {
		t.warnings[len(t.warnings)-1] += fmt.Sprintf("; the jobs are those of %s", s.path)
	}
	return clusterTable{jobs: s.localJobs(), from: "the table of " + s.path, known: true, warnings: t.warnings}
}

// localJobs is the local file's table as /table lists it.
func (s *session) localJobs() []status.TableJob {
	return status.TableJobs(statusEntries(s.cfg.Jobs), time.Now())
}

// leaderTable finds the leader and reads its table from its HTTP server. It returns errNoLeader
// when nobody leads.
func (s *session) leaderTable(ctx context.Context) ([]status.TableJob, string, error) {
	src := s.statusSource()
	rs, err := src.Replicas(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("read the replicas: %w", err)
	}
	e, err := src.Election(ctx, rs)
	if err != nil {
		return nil, "", fmt.Errorf("read the leader: %w", err)
	}
	if e.Leader == nil {
		return nil, "", errNoLeader
	}
	node := e.Leader.Node
	i := slices.IndexFunc(rs, func(r status.Replica) bool { return r.Node == node })
	switch {
	case i < 0:
		return nil, node, fmt.Errorf("the leader %s has no registry entry", node)
	case rs[i].HTTPAddr == "":
		return nil, node, fmt.Errorf("the leader %s serves no HTTP (its http.addr is empty)", node)
	}
	jobs, err := fetchTable(ctx, dialAddr(rs[i].HTTPAddr, node))
	if err != nil {
		return nil, node, fmt.Errorf("the leader %s: %w", node, err)
	}
	return jobs, node, nil
}

// dialAddr is where a replica that listens on addr is reached: a replica listening on every
// interface (0.0.0.0:8080, [::]:8080) is reached by its node name, which is its hostname unless
// configured otherwise.
func dialAddr(addr, node string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort(node, port)
	}
	return addr
}

// fetchTable reads the /table document of the replica at addr.
func fetchTable(ctx context.Context, addr string) ([]status.TableJob, error) {
	ctx, cancel := context.WithTimeout(ctx, tableTimeout)
	defer cancel()
	url := "http://" + addr + "/table"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read its table: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%s: not found (a version that does not serve its table)", url)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	var doc status.TableDoc
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxTableBytes))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: not a table (or larger than %d MiB): %w", url, maxTableBytes>>20, err)
	}
	for _, j := range doc.Jobs {
		if !tableJobName.MatchString(j.Name) || !printable(j.Schedule) || !printable(j.Timezone) || !printable(j.Digest) {
			return nil, fmt.Errorf("%s: job %q is no job of a valid table", url, j.Name)
		}
	}
	return doc.Jobs, nil
}

// printable reports whether s holds no control characters, which would reach the terminal.
func printable(s string) bool {
	return !strings.ContainsFunc(s, unicode.IsControl)
}

// maxNamed is how many job names a message lists before it says how many more there are.
const maxNamed = 10

// tableDiff names the jobs in which the local table differs from the leader's, or returns "".
func tableDiff(local, leader []status.TableJob) string {
	theirs := make(map[string]string, len(leader))
	for _, j := range leader {
		theirs[j.Name] = j.Digest
	}
	ours := make(map[string]bool, len(local))
	var onlyLocal, changed, onlyLeader []string
	for _, j := range local {
		ours[j.Name] = true
		switch d, ok := theirs[j.Name]; {
		case !ok:
			onlyLocal = append(onlyLocal, j.Name)
		case d != j.Digest:
			changed = append(changed, j.Name)
		}
	}
	for _, j := range leader {
		if !ours[j.Name] {
			onlyLeader = append(onlyLeader, j.Name)
		}
	}
	var parts []string
	for _, p := range []struct {
		what  string
		names []string
	}{{"only the leader has", onlyLeader}, {"only the file has", onlyLocal}, {"configured differently", changed}} {
		if len(p.names) > 0 {
			parts = append(parts, p.what+" "+nameList(p.names))
		}
	}
	return strings.Join(parts, "; ")
}

// nameList lists names, the first maxNamed of them and how many more.
func nameList(names []string) string {
	slices.Sort(names)
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}

// entries is the table as status.Collect takes it: each job's next slot as its table gave it.
func (t clusterTable) entries() []status.Entry {
	out := make([]status.Entry, len(t.jobs))
	for i, j := range t.jobs {
		out[i] = status.Entry{Name: j.Name, Schedule: j.Schedule, Timezone: j.Timezone, Enabled: j.Enabled, Digest: j.Digest}
		if j.Next != nil {
			next := *j.Next
			out[i].Next = func(time.Time) time.Time { return next }
		}
	}
	return out
}

// check returns a usage error when the table is known and has no job named name: it suggests
// the nearest name and lists the jobs.
func (t clusterTable) check(name string) error {
	if !t.known {
		return nil
	}
	names := make([]string, len(t.jobs))
	for i, j := range t.jobs {
		if j.Name == name {
			return nil
		}
		names[i] = j.Name
	}
	return unknownJob(name, t.from, names)
}

// unknownJob is the usage error for a job name that in (a table, for the message) does not
// hold: the nearest name if one is near, and the jobs there are.
func unknownJob(name, in string, names []string) error {
	msg := fmt.Sprintf("no job named %q in %s", name, in)
	if near := config.Nearest(name, names); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	if len(names) == 0 {
		msg += "; it has no jobs"
	} else {
		msg += "; its jobs: " + nameList(slices.Clone(names))
	}
	return &usageError{errors.New(msg)}
}
