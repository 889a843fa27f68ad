package jobs

import (
	"scheduler/internal/jobs/internal/attempts"
	"scheduler/internal/jobs/internal/catchup"
	"scheduler/internal/jobs/internal/jobspec"
)

// Spec is one job of the cron table, as the runner runs it (jobspec.Spec).
type Spec = jobspec.Spec

// Overlap says what happens when a job's slot is due while an earlier run of it still runs.
type Overlap = jobspec.Overlap

// The overlap policies (jobspec).
const (
	OverlapSkip    = jobspec.OverlapSkip
	OverlapQueue   = jobspec.OverlapQueue
	OverlapReplace = jobspec.OverlapReplace
	OverlapAllow   = jobspec.OverlapAllow
)

// Misfire says what a new leader does with the slots it finds missed.
type Misfire = jobspec.Misfire

// The misfire policies (jobspec).
const (
	MisfireSkip = jobspec.MisfireSkip
	MisfireOnce = jobspec.MisfireOnce
	MisfireAll  = jobspec.MisfireAll
)

// attemptJob is what running the job's attempts reads of it.
func attemptJob(s *Spec) attempts.Job {
	return attempts.Job{Name: s.Name, Executor: s.Executor, Timeout: s.Timeout, Retries: s.Retries,
		RetryBackoff: s.RetryBackoff, Location: s.Schedule.Location()}
}

// catchupJob is what catch-up planning reads of the job.
func catchupJob(s *Spec) catchup.Job {
	return catchup.Job{Name: s.Name, Schedule: s.Schedule, Misfire: catchup.Misfire(s.Misfire), Window: s.Catchup, Jitter: s.Jitter, Enabled: s.Enabled,
		Retries: s.Retries}
}
