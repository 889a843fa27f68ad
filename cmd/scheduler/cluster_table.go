package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"scheduler/cmd/scheduler/internal/view"
	"scheduler/internal/status"
)

// table reads the cluster's table: the leader's when a leader leads and serves it, else the
// local file's if it is valid.
func (s *session) table(ctx context.Context) view.Table {
	jobs, node, err := s.leaderTable(ctx)
	if err == nil {
		t := view.Table{Jobs: jobs, From: fmt.Sprintf("the leader's table (node %s)", node), Known: true}
		if diff := view.Diff(s.localJobs(), jobs); s.localValid && diff != "" {
			t.Warnings = []string{fmt.Sprintf("the table of %s differs from the leader's (node %s): %s; the leader's is used", s.path, node, diff)}
		}
		return t
	}
	why := "" // why the leader's table is not used; none while no replica leads, which Collect reports
	if !errors.Is(err, errNoLeader) {
		why = fmt.Sprintf("cannot read the leader's table: %v; ", err)
	}
	if !s.localValid {
		return view.Table{Warnings: []string{why + fmt.Sprintf("no job table: the jobs of %s are invalid (see `scheduler validate`)", s.path)}}
	}
	t := view.Table{Jobs: s.localJobs(), From: "the table of " + s.path, Known: true}
	if why != "" {
		t.Warnings = []string{why + "the jobs are those of " + s.path}
	}
	return t
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
	jobs, err := view.Fetch(ctx, view.DialAddr(rs[i].HTTPAddr, node))
	if err != nil {
		return nil, node, fmt.Errorf("the leader %s: %w", node, err)
	}
	return jobs, node, nil
}
