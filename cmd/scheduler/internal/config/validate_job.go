package config

import (
	"fmt"
	"path"
	"strings"
	"time"

	"scheduler/internal/control"
	"scheduler/internal/schedule"
)

// validateJob checks one job and returns its schedule, parsed in its zone; nil when either is
// refused. A problem with a value the job inherited from `defaults` is reported once, under
// defaults.KEY, by validateDefaults instead.
func validateJob(p *problems, key string, job Job, gaps *schedule.Cache) *schedule.Schedule {
	inherited := func(k string) bool { return job.inherited[k] }
	at := func(k string) string { return key + "." + k }

	switch {
	case job.Name == "":
		p.add(at("name"), "is required")
	case !jobNameRE.MatchString(job.Name):
		p.add(at("name"), "must match [a-z0-9_-]+, got %q", job.Name)
	case len(job.Name) > control.MaxJobName:
		p.add(at("name"), "is %d bytes long, more than the limit of %d", len(job.Name), control.MaxJobName)
	}

	// A schedule is parsed in UTC when the zone is bad, so its own problems still show.
	loc, zoneOK := time.UTC, false
	switch why := zoneRefused(job.Timezone); {
	case job.Timezone == "":
		p.add(at("timezone"), "is required (an IANA zone such as Europe/Berlin)")
	case why != "":
		p.add(at("timezone"), "must name an IANA zone such as Europe/Berlin: %s", why)
	default:
		l, err := gaps.Zone(job.Timezone)
		switch {
		case err == nil:
			loc, zoneOK = l, true
		case !inherited("timezone"):
			p.add(at("timezone"), "unknown IANA time zone %q", job.Timezone)
		}
	}
	var sched *schedule.Schedule
	if job.Schedule == "" {
		p.add(at("schedule"), "is required")
	} else if s, err := gaps.Parse(job.Schedule, loc); err != nil {
		p.add(at("schedule"), "%v", err)
	} else {
		sched = s
		if job.Jitter > 0 {
			validateJitter(p, at("jitter"), job, sched, gaps)
		}
	}
	if !zoneOK {
		sched = nil
	}

	if _, known := typeKeys[job.Type]; !known {
		if job.Type == "" {
			p.add(at("type"), "is required: one of builtin, exec, sql, http")
		} else if !inherited("type") {
			p.add(at("type"), "must be one of builtin, exec, sql, http; got %q", job.Type)
		}
	} else {
		validateJobType(p, key, job)
	}

	checks := []struct {
		k   string
		bad bool
		msg string
	}{
		{"timeout", job.Timeout <= 0, fmt.Sprintf("must be positive, got %s", job.Timeout)},
		{"retries", job.Retries < 0 || job.Retries > MaxRetries, fmt.Sprintf("must be from 0 to %d, got %d", MaxRetries, job.Retries)},
		{"retry_backoff", job.RetryBackoff < 0, fmt.Sprintf("must not be negative, got %s", job.RetryBackoff)},
		{"catchup", job.Catchup < 0, fmt.Sprintf("must not be negative, got %s", job.Catchup)},
		{"jitter", job.Jitter < 0, fmt.Sprintf("must not be negative, got %s", job.Jitter)},
	}
	for _, c := range checks {
		if c.bad && !inherited(c.k) {
			p.add(at(c.k), "%s", c.msg)
		}
	}
	if !inherited("overlap") {
		p.enum(at("overlap"), job.Overlap, "skip", "queue", "replace", "allow")
	}
	if !inherited("misfire") {
		p.enum(at("misfire"), job.Misfire, "skip", "once", "all")
	}
	checkJobHistory(p, at("history"), job.History, jobInheritedHistory(job))
	return sched
}

// validateJitter checks that the jitter window is shorter than the shortest gap between two
// slots of the schedule: a longer window would let a delayed slot fire after the next one, or,
// far longer, postpone every slot beyond any horizon.
func validateJitter(p *problems, key string, job Job, sched *schedule.Schedule, gaps *schedule.Cache) {
	gap, ok := gaps.ShortestGap(sched)
	if !ok || job.Jitter < gap {
		return
	}
	from := ""
	if job.inherited["jitter"] {
		from = " (from defaults.jitter)"
	}
	p.add(key, "%s%s must be shorter than the shortest gap between two slots of %q, %s", job.Jitter, from, job.Schedule, gap)
}

// validateJobType checks that no other type's keys are set, then the settings of the job's
// type with its kind's own check.
func validateJobType(p *problems, key string, job Job) {
	set := setKeys(job.JobSpec)
	set["method"] = set["method"] && !job.inherited["method"]
	for typ, keys := range typeKeys {
		if typ == job.Type {
			continue
		}
		for _, k := range keys {
			if set[k] && !job.inherited[k] {
				p.add(key+"."+k, "only applies to jobs of type %s, this job is %s", typ, job.Type)
			}
		}
	}
	for _, kp := range kindProblems(job.JobSpec) {
		// An inherited value's problem is validateDefaults' to report, once.
		p.once(kindKey(key, job, kp.Key), kp.Message)
	}
}

// zoneRefused says why name, a zone time.LoadLocation may accept, is no zone a table may name;
// "" when it is one. Local, localtime and posixrules are the host's own zone or a copy of one it
// chose; right/ zones count leap seconds, so each instant is off by them.
func zoneRefused(name string) string {
	if clean := path.Clean(name); clean != name {
		return fmt.Sprintf("%s is not written as a zone's name (%s)", name, clean)
	} else if name == "Local" || name == "localtime" || name == "posixrules" {
		return name + " differs from host to host"
	} else if strings.HasPrefix(name, "right/") {
		return name + " counts leap seconds"
	}
	return ""
}

// validateDefaults checks the values of the `defaults` section that jobs inherit.
func validateDefaults(p *problems, d JobSpec) {
	if d.Timezone != "" {
		if _, err := time.LoadLocation(d.Timezone); err != nil || zoneRefused(d.Timezone) != "" {
			p.add("defaults.timezone", "unknown IANA time zone %q", d.Timezone)
		}
	}
	if d.Type != "" {
		if _, ok := typeKeys[d.Type]; !ok {
			p.add("defaults.type", "must be one of builtin, exec, sql, http; got %q", d.Type)
		}
	}
	if d.Timeout <= 0 {
		p.add("defaults.timeout", "must be positive, got %s", d.Timeout)
	}
	if d.Retries < 0 || d.Retries > MaxRetries {
		p.add("defaults.retries", "must be from 0 to %d, got %d", MaxRetries, d.Retries)
	}
	p.nonNegative("defaults.retry_backoff", d.RetryBackoff)
	p.nonNegative("defaults.catchup", d.Catchup)
	p.nonNegative("defaults.jitter", d.Jitter)
	p.enum("defaults.overlap", d.Overlap, "skip", "queue", "replace", "allow")
	p.enum("defaults.misfire", d.Misfire, "skip", "once", "all")
	validateDefaultKinds(p, d)
}
