// Package view is the job table as the command line sees the cluster: the leader's, read from
// the /table of its HTTP server, compared with the local file's, and the names in it that a
// command's job argument is judged against.
//
// A registry value of etcd holds at most a megabyte or so, too little for the names of the
// largest table; the leader's HTTP server has no such bound and serves the table from memory.
package view

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

	"scheduler/cmd/scheduler/internal/suggest"
	"scheduler/internal/status"
)

// fetchTimeout bounds the read of a replica's table. The replica serves it from memory; the
// bound leaves room for the largest table over a slow link.
const fetchTimeout = 30 * time.Second

// MaxTableBytes bounds a replica's answer, which the command holds in memory: the largest
// table's document is well below it.
const MaxTableBytes = 256 << 20

// jobName is a job name as the configuration allows it. A table that holds another is no
// replica's: a registry entry anyone with access to the coordinator can write names the server.
var jobName = regexp.MustCompile(`^[a-z0-9_-]+$`)

// Table is the table a command judges a job by and status shows: the leader's or, when it
// cannot be read, the local file's.
type Table struct {
	// Jobs are the table's jobs.
	Jobs []status.TableJob
	// From says whose table it is, for messages: "the leader's table (node a)".
	From string
	// Known is false when no table could be read: no job name can be judged.
	Known bool
	// Warnings say why the table is not the leader's, or how the local file's differs from it.
	Warnings []string
}

// Entries is the table as status.Collect takes it: each job's next slot as the table gave it.
func (t Table) Entries() []status.Entry {
	out := make([]status.Entry, len(t.Jobs))
	for i, j := range t.Jobs {
		out[i] = status.Entry{Name: j.Name, Schedule: j.Schedule, Timezone: j.Timezone, Enabled: j.Enabled, Digest: j.Digest}
		if j.Next != nil {
			next := *j.Next
			out[i].Next = func(time.Time) time.Time { return next }
		}
	}
	return out
}

// Check returns an error when the table is known and has no job named name (see UnknownJob).
func (t Table) Check(name string) error {
	if !t.Known {
		return nil
	}
	names := make([]string, len(t.Jobs))
	for i, j := range t.Jobs {
		if j.Name == name {
			return nil
		}
		names[i] = j.Name
	}
	return UnknownJob(name, t.From, names)
}

// UnknownJob is the error for a job name that the table named in (for the message), of jobs
// names, does not hold: with the nearest name if one is near, and the jobs there are.
func UnknownJob(name, in string, names []string) error {
	msg := fmt.Sprintf("no job named %q in %s", name, in) + suggest.DidYouMean(name, names)
	if len(names) == 0 {
		return errors.New(msg + "; it has no jobs")
	}
	return errors.New(msg + "; its jobs: " + nameList(slices.Clone(names)))
}

// DialAddr is where a replica that listens on addr is reached: one listening on every interface
// (0.0.0.0:8080, [::]:8080) is reached by its node name, which is its hostname unless
// configured otherwise.
func DialAddr(addr, node string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort(node, port)
	}
	return addr
}

// Fetch reads the /table document of the replica at addr, refusing one that no replica of a
// valid configuration serves.
func Fetch(ctx context.Context, addr string) ([]status.TableJob, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
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
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxTableBytes)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: not a table (or larger than %d MiB): %w", url, MaxTableBytes>>20, err)
	}
	for _, j := range doc.Jobs {
		if !jobName.MatchString(j.Name) || !printable(j.Schedule) || !printable(j.Timezone) || !printable(j.Digest) {
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

// Diff names the jobs in which the local table differs from the leader's, or returns "".
func Diff(local, leader []status.TableJob) string {
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

// nameList lists names, sorted, the first maxNamed of them and how many more.
func nameList(names []string) string {
	slices.Sort(names)
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}
