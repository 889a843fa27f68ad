package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"scheduler"

	"scheduler/internal/control"
	"scheduler/internal/election"
	"scheduler/internal/fence"
	"scheduler/internal/jobs"
)

// statusDoc is the `status --json` document, also served on /status.
type statusDoc struct {
	Leader   *leaderDoc        `json:"leader"` // null while no replica leads
	Replicas []control.Replica `json:"replicas"`
	Warnings []string          `json:"warnings"`
	Jobs     []jobStatus       `json:"jobs"`

	// Leaseless lists keys under the election prefix bound to no lease: each blocks the election.
	Leaseless []leaselessDoc `json:"leaseless_keys"`
}

type leaderDoc struct {
	Node  string     `json:"node"`
	Token int64      `json:"token"`
	Since *time.Time `json:"since"` // null if the leader did not publish it
}

type jobStatus struct {
	Name     string         `json:"name"`
	Schedule string         `json:"schedule"`
	Timezone string         `json:"timezone"`
	Enabled  bool           `json:"enabled"`
	Next     *time.Time     `json:"next"` // null for a disabled job or a schedule without future slots
	Paused   bool           `json:"paused"`
	Last     *scheduler.Run `json:"last"` // null before the first run
	// Blocked is set while the job's fence is above the leader's token: the leader runs the
	// other jobs and not this one (null otherwise).
	Blocked *blockedDoc `json:"blocked"`
}

// blockedDoc says why a job does not run and what to do.
type blockedDoc struct {
	Fence  int64  `json:"fence"`  // the job's fence in the store
	Token  int64  `json:"token"`  // the leader's token, below it
	Reason string `json:"reason"` // the possible causes and the remedy of each
	// Held: the fence is below the token, and the leader, leading for longer than
	// heldAfter, has not raised it: a transaction with an older token holds it.
	Held bool `json:"held,omitempty"`
}

// heldAfter is how long a leader may take to raise a job's fence before status reports the job
// held: a raise held up by an open transaction gives up after its lock timeout (10s), twice when
// the held job is searched among the others.
const heldAfter = 30 * time.Second

// collectStatus reads the leader from the backend, the replicas and pauses from the control
// state, and the last runs from the store. Parts it cannot read become warnings, so a partial
// answer still helps an operator.
func collectStatus(ctx context.Context, table []Job, src leaderSource, ctl controlState, store *fence.Store, now time.Time) statusDoc {
	prefix, cli := src.prefix, src.etcd
	doc := statusDoc{Replicas: []control.Replica{}, Warnings: []string{}, Jobs: []jobStatus{}, Leaseless: []leaselessDoc{}}
	warn := func(format string, args ...any) { doc.Warnings = append(doc.Warnings, fmt.Sprintf(format, args...)) }
	names := make([]string, len(table))
	for i, j := range table {
		names[i] = j.Name
	}
	// The fences are read before the leader: a leader that takes over in between has a token at
	// least as high as every fence read, so a job is never reported blocked by a takeover.
	var fences map[string]int64
	if store != nil && len(names) > 0 {
		var err error
		if fences, err = store.Fences(ctx, names...); err != nil {
			warn("read the fences from the store: %v", err)
		}
	}

	if cli == nil {
		// A backend other than etcd has no election keys of its own to check.
		return collectRest(ctx, doc, table, src, ctl, store, fences, now)
	}
	l, err := election.ReadLeader(ctx, cli, prefix)
	leads := err == nil
	switch {
	case errors.Is(err, election.ErrNoLeader):
		warn("no replica leads: no job runs until one is elected")
	case err != nil:
		warn("read the leader from etcd: %v", err)
	default:
		doc.Leader = &leaderDoc{Node: l.Node, Token: l.Token}
		if !l.Since.IsZero() {
			since := l.Since.UTC()
			doc.Leader.Since = &since
		}
	}
	if stray, err := readLeaseless(ctx, cli, prefix); err != nil {
		warn("read the election keys from etcd: %v", err)
	} else {
		doc.Leaseless = stray
		for _, l := range stray {
			warn("%s", l.problem())
		}
	}
	if rs, err := ctl.Replicas(ctx); err != nil {
		warn("read the replicas from %s: %v", src.where(), err)
	} else {
		doc.Replicas = rs
		if leads {
			if p := foreignLeader(l, rs); p != "" {
				warn("%s", p)
			}
		}
		if groups := control.HashGroups(rs); len(groups) > 1 {
			var parts []string
			for hash, nodes := range groups {
				parts = append(parts, fmt.Sprintf("%s: %s", hash, strings.Join(nodes, ",")))
			}
			sort.Strings(parts)
			warn("replicas run different job tables (%s); deploy the same configuration everywhere", strings.Join(parts, "; "))
		}
	}
	return collectJobs(ctx, doc, table, ctl, store, fences, now)
}

// collectJobs adds the jobs' pauses, last runs, fences and next slots to doc.
func collectJobs(ctx context.Context, doc statusDoc, table []Job, ctl controlState, store *fence.Store, fences map[string]int64, now time.Time) statusDoc {
	warn := func(format string, args ...any) { doc.Warnings = append(doc.Warnings, fmt.Sprintf(format, args...)) }
	names := make([]string, len(table))
	for i, j := range table {
		names[i] = j.Name
	}
	paused, err := ctl.Paused(ctx)
	if err != nil {
		warn("read paused jobs: %v", err)
	}
	var last map[string]scheduler.Run
	if store != nil {
		if last, err = store.Last(ctx, names...); err != nil {
			warn("read the last runs from the store: %v", err)
		}
	}
	for _, j := range table {
		js := jobStatus{Name: j.Name, Schedule: j.Schedule, Timezone: j.Timezone, Enabled: j.Enabled}
		_, js.Paused = paused[j.Name]
		if r, ok := last[j.Name]; ok {
			js.Last = &r
		}
		if f, ok := fences[j.Name]; ok && doc.Leader != nil && f > doc.Leader.Token {
			js.Blocked = &blockedDoc{Fence: f, Token: doc.Leader.Token, Reason: jobs.BlockReason(j.Name, doc.Leader.Token, f)}
			warn("%s", js.Blocked.Reason)
		} else if ok && doc.Leader != nil && f < doc.Leader.Token && doc.Leader.Since != nil && now.Sub(*doc.Leader.Since) > heldAfter {
			js.Blocked = &blockedDoc{Fence: f, Token: doc.Leader.Token, Held: true, Reason: jobs.HeldReason(j.Name, doc.Leader.Token)}
			warn("%s", js.Blocked.Reason)
		}
		if j.schedule != nil && j.Enabled {
			if sl := j.schedule.Next(now); !sl.At.IsZero() {
				at := sl.At.UTC()
				js.Next = &at
			}
		}
		doc.Jobs = append(doc.Jobs, js)
	}
	return doc
}
