package config

import (
	"regexp"
	"testing"
	"time"

	"scheduler/internal/notify"
)

// TestTableHash_FieldsDoNotRunTogether: two tables that differ only in where one value ends and
// the next begins (a value holding what once separated fields) hash differently, and the hash
// keeps its form: 12 hex digits.
func TestTableHash_FieldsDoNotRunTogether(t *testing.T) {
	job := func(edit func(*JobSpec)) Job {
		j := Job{Name: "a", JobSpec: JobSpec{Schedule: "@hourly", Timezone: "UTC", Type: "exec", Command: []string{"/bin/true"},
			Timeout: time.Hour, Overlap: "skip", Misfire: "once", Enabled: true}}
		edit(&j.JobSpec)
		return j
	}
	pairs := []struct {
		name string
		a, b Job
	}{
		{"Env", job(func(j *JobSpec) { j.Env = map[string]string{"A": "1;B=2"} }),
			job(func(j *JobSpec) { j.Env = map[string]string{"A": "1", "B": "2"} })},
		{"Headers", job(func(j *JobSpec) { j.Headers = map[string]string{"X-A": "1;X-B=2"} }),
			job(func(j *JobSpec) { j.Headers = map[string]string{"X-A": "1", "X-B": "2"} })},
		{"Params", job(func(j *JobSpec) { j.Params = map[string]any{"a": "1;b=2"} }),
			job(func(j *JobSpec) { j.Params = map[string]any{"a": "1", "b": "2"} })},
		{"ParamType", job(func(j *JobSpec) { j.Params = map[string]any{"a": "1"} }),
			job(func(j *JobSpec) { j.Params = map[string]any{"a": 1} })},
		{"AcrossFields", job(func(j *JobSpec) { j.SQL, j.Role = "x|y", "z" }),
			job(func(j *JobSpec) { j.SQL, j.Role = "x", "y|z" })},
		{"OverlapMisfire", job(func(j *JobSpec) { j.Overlap, j.Misfire = "a/b", "c" }),
			job(func(j *JobSpec) { j.Overlap, j.Misfire = "a", "b/c" })},
		{"NotifyList", job(func(j *JobSpec) { j.Notify = notify.Config{Email: []string{"a b"}} }),
			job(func(j *JobSpec) { j.Notify = notify.Config{Email: []string{"a", "b"}} })},
	}
	form := regexp.MustCompile(`^[0-9a-f]{12}$`)
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			ha, hb := TableHash(&Config{Jobs: []Job{p.a}}), TableHash(&Config{Jobs: []Job{p.b}})
			if ha == hb {
				t.Errorf("TableHash %s for both tables", ha)
			}
			if da, db := JobDigest(p.a), JobDigest(p.b); da == db {
				t.Errorf("JobDigest %s for both jobs", da)
			}
			if !form.MatchString(ha) || !form.MatchString(JobDigest(p.a)) {
				t.Errorf("hash %q, digest %q: want 12 hex digits", ha, JobDigest(p.a))
			}
			if again := TableHash(&Config{Jobs: []Job{p.a}}); again != ha {
				t.Errorf("TableHash %s, then %s", ha, again)
			}
		})
	}
}

// TestInheritedKey_UnknownKeyIsTheJobs: a job's own unknown key under a key it inherited is
// its own problem, not the default's.
func TestInheritedKey_UnknownKeyIsTheJobs(t *testing.T) {
	cfg := &Config{Jobs: []Job{{inherited: map[string]bool{"timeout": true, "params": true, "history.bogus": true}}}}
	for _, tc := range []struct {
		p    Problem
		want bool
	}{
		{Problem{Key: "jobs[0].timeout.x", Msg: "unknown key"}, false},
		{Problem{Key: "jobs[0].timeout", Msg: "must be a duration"}, true},
		{Problem{Key: "jobs[0].params.clients", Msg: "must be a whole number"}, true},
		{Problem{Key: "jobs[0].history.bogus", Msg: "unknown key"}, true},
		{Problem{Key: "jobs[0].history.other", Msg: "unknown key"}, false},
	} {
		if got := inheritedKey(cfg, nil, tc.p); got != tc.want {
			t.Errorf("inheritedKey(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}
