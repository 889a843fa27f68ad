package view

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"scheduler"
	"scheduler/internal/status"
)

// Source is where Read finds the leader and its registry entry: the status source of the
// configured coordinator.
type Source interface {
	Replicas(ctx context.Context) ([]scheduler.Replica, error)
	Election(ctx context.Context, replicas []scheduler.Replica) (status.Election, error)
}

// Local is the local file's table: its path, for messages, and its jobs, nil when Valid is
// false (a file whose jobs are broken has no table).
type Local struct {
	Path  string
	Jobs  []status.TableJob
	Valid bool
}

// errNoLeader is leaderTable's answer while no replica leads.
var errNoLeader = errors.New("no leader")

// Read returns the cluster's table: the leader's when a replica leads and serves it, with a
// warning when the local file's differs; else the local file's if it is valid, with a warning
// saying why. While no replica leads it adds none: the status says so already.
func Read(ctx context.Context, src Source, local Local) Table {
	jobs, node, err := leaderTable(ctx, src)
	if err == nil {
		t := Table{Jobs: jobs, From: fmt.Sprintf("the leader's table (node %s)", node), Known: true}
		if diff := Diff(local.Jobs, jobs); local.Valid && diff != "" {
			t.Warnings = []string{fmt.Sprintf("the table of %s differs from the leader's (node %s): %s; the leader's is used", local.Path, node, diff)}
		}
		return t
	}
	why := ""
	if !errors.Is(err, errNoLeader) {
		why = fmt.Sprintf("cannot read the leader's table: %v; ", err)
	}
	if !local.Valid {
		return Table{Warnings: []string{why + fmt.Sprintf("no job table: the jobs of %s are invalid (see `scheduler validate`)", local.Path)}}
	}
	t := Table{Jobs: local.Jobs, From: "the table of " + local.Path, Known: true}
	if why != "" {
		t.Warnings = []string{why + "the jobs are those of " + local.Path}
	}
	return t
}

// leaderTable finds the leader and reads its table from the HTTP server its registry entry
// names.
func leaderTable(ctx context.Context, src Source) ([]status.TableJob, string, error) {
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
	i := slices.IndexFunc(rs, func(r scheduler.Replica) bool { return r.Node == node })
	switch {
	case i < 0:
		return nil, node, fmt.Errorf("the leader %s has no registry entry", node)
	case rs[i].HTTPAddr == "":
		return nil, node, fmt.Errorf("the leader %s serves no HTTP (its http.addr is empty)", node)
	}
	jobs, err := Fetch(ctx, DialAddr(rs[i].HTTPAddr, node))
	if err != nil {
		return nil, node, fmt.Errorf("the leader %s: %w", node, err)
	}
	return jobs, node, nil
}
