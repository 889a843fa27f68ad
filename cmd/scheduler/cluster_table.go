package main

import (
	"context"
	"time"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/view"
	"scheduler/internal/status"
)

// table reads the cluster's table: the leader's, or the local file's (see view.Read).
func (s *session) table(ctx context.Context) view.Table {
	local := view.Local{Path: s.path, Valid: s.localValid}
	if s.localValid {
		local.Jobs = status.TableJobs(statusEntries(s.cfg.Jobs, config.JobDigest), time.Now())
	}
	return view.Read(ctx, s.statusSource(), local)
}

// clusterTable reads the cluster's table as the command line does: the leader's, or this
// replica's own while none leads or the leader's cannot be read.
func (d *daemon) clusterTable(ctx context.Context) view.Table {
	jobs, _ := d.table()
	local := view.Local{Path: d.path, Jobs: status.TableJobs(statusEntries(jobs, config.JobDigest), time.Now()), Valid: true}
	return view.Read(ctx, d.statusSource(), local)
}
