package status

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"scheduler"
)

// Source is what the status reads: the election, the replicas and the paused jobs from the
// coordinator, the fences and the last runs from the store.
type Source interface {
	// Election reads the election once. Its problems are judged against replicas, the
	// registered replicas, or, with replicas nil (not known), without them.
	Election(ctx context.Context, replicas []scheduler.Replica) (Election, error)
	// Replicas returns the registered replicas by node name.
	Replicas(ctx context.Context) ([]scheduler.Replica, error)
	// Paused returns the names of the paused jobs.
	Paused(ctx context.Context) (map[string]bool, error)
	// Fences returns the fence of each of jobs that has one.
	Fences(ctx context.Context, jobs ...string) (map[string]int64, error)
	// Last returns the newest run of each of jobs that has run.
	Last(ctx context.Context, jobs ...string) (map[string]scheduler.Run, error)
}

// Election is the election as one read saw it.
type Election struct {
	Leader    *Leader        // nil while no replica leads
	Leaseless []LeaselessKey // keys bound to no lease, oldest first
	// Problems describe what keeps the election from working, each with its remedy.
	Problems []string
	// Strays describe keys beside the election that no replica wrote (a registry entry written
	// by hand), each with its remedy: status warns of them; they do not fail readiness.
	Strays []string
}

// Entry is a job of the table as configured.
type Entry struct {
	Name, Schedule, Timezone string
	Enabled                  bool
	// Digest identifies the job's whole configuration, so that two tables can be compared job
	// by job; empty when not known.
	Digest string
	// Next returns the job's first slot after now, or the zero time; nil for none.
	Next func(now time.Time) time.Time
	// Words is the schedule for a person, for the console; empty shows Schedule.
	Words string
	// Slots returns the job's next n slots after now, in its zone, with At, Nominal and
	// Adjusted set; nil for none.
	Slots func(now time.Time, n int) []Slot
}

// Explain words why a job is blocked: the words the runner logs, so that the log, the document
// and /readyz say the same. It also names where the coordinator's parts are read, for the
// warnings and /readyz of a backend that keeps them outside etcd.
type Explain struct {
	// Blocked explains a fence above the leader's token.
	Blocked func(job string, token, fence int64) string
	// Held explains a fence the leader could not raise to its token.
	Held func(job string, token int64) string
	// Election names where the leader is read, and Control where the replicas and the paused
	// jobs are. Default: etcd, for both.
	Election, Control string
}

// places returns where the leader and where the control state are read, etcd unless ex says.
func (ex Explain) places() (election, ctl string) {
	election, ctl = ex.Election, ex.Control
	if election == "" {
		election = "etcd"
	}
	if ctl == "" {
		ctl = "etcd"
	}
	return election, ctl
}

// HeldAfter is how long a leader may take to raise a job's fence before status reports the job
// held: a raise held up by an open transaction gives up after its lock timeout, twice when the
// held job is searched among the others.
const HeldAfter = 30 * time.Second

// Collect reads the status of table at now from src. Parts it cannot read become warnings, so
// a partial answer still helps an operator.
func Collect(ctx context.Context, src Source, ex Explain, table []Entry, now time.Time) Doc {
	doc := Doc{Replicas: []scheduler.Replica{}, Warnings: []string{}, Jobs: []Job{}, Leaseless: []LeaselessKey{}}
	warn := func(format string, args ...any) { doc.Warnings = append(doc.Warnings, fmt.Sprintf(format, args...)) }
	electionAt, controlAt := ex.places()
	names := make([]string, len(table))
	for i, j := range table {
		names[i] = j.Name
	}
	// The fences are read before the leader: a leader that takes over in between has a token at
	// least as high as every fence read, so a job is never reported blocked by a takeover.
	var fences map[string]int64
	if len(names) > 0 {
		var err error
		if fences, err = src.Fences(ctx, names...); err != nil {
			warn("read the fences from the store: %v", err)
		}
	}
	var known []scheduler.Replica // nil unless read
	if rs, err := src.Replicas(ctx); err != nil {
		warn("read the replicas from %s: %v", controlAt, err)
	} else {
		known = append([]scheduler.Replica{}, rs...)
		doc.Replicas = known
	}
	if e, err := src.Election(ctx, known); err != nil {
		warn("read the leader from %s: %v", electionAt, err)
	} else {
		doc.Leader = e.Leader
		if e.Leader == nil {
			warn("no replica leads: no job runs until one is elected")
		}
		if e.Leaseless != nil {
			doc.Leaseless = e.Leaseless
		}
		for _, p := range append(e.Problems, e.Strays...) {
			warn("%s", p)
		}
	}
	if p := tableSplit(doc.Replicas); p != "" {
		warn("%s", p)
	}
	if p := storeSplit(doc.Replicas); p != "" {
		warn("%s", p)
	}
	paused, err := src.Paused(ctx)
	if err != nil {
		warn("read paused jobs from %s: %v", controlAt, err)
	}
	last, err := src.Last(ctx, names...)
	if err != nil {
		warn("read the last runs from the store: %v", err)
	}
	for _, j := range table {
		js := Job{Name: j.Name, Schedule: j.Schedule, Timezone: j.Timezone, Enabled: j.Enabled, Paused: paused[j.Name]}
		if r, ok := last[j.Name]; ok {
			js.Last = &r
		}
		if js.Blocked = block(doc.Leader, fences, j.Name, ex, now); js.Blocked != nil {
			warn("%s", js.Blocked.Reason)
		}
		if j.Next != nil && j.Enabled {
			if at := j.Next(now); !at.IsZero() {
				at = at.UTC()
				js.Next = &at
			}
		}
		doc.Jobs = append(doc.Jobs, js)
	}
	return doc
}

// block returns why job does not run under leader l, or nil: its fence is above l's token, or
// l has led for longer than HeldAfter without raising it.
func block(l *Leader, fences map[string]int64, job string, ex Explain, now time.Time) *Block {
	f, ok := fences[job]
	switch {
	case !ok || l == nil:
		return nil
	case f > l.Token:
		return &Block{Fence: f, Token: l.Token, Reason: ex.Blocked(job, l.Token, f)}
	case f < l.Token && l.Since != nil && now.Sub(*l.Since) > HeldAfter:
		return &Block{Fence: f, Token: l.Token, Held: true, Reason: ex.Held(job, l.Token)}
	}
	return nil
}

// tableSplit describes replicas that run different job tables, or returns "".
func tableSplit(rs []scheduler.Replica) string {
	groups := map[string][]string{}
	for _, r := range rs {
		groups[r.TableHash] = append(groups[r.TableHash], r.Node)
	}
	if len(groups) < 2 {
		return ""
	}
	parts := make([]string, 0, len(groups))
	for hash, nodes := range groups {
		slices.Sort(nodes)
		parts = append(parts, fmt.Sprintf("%s: %s", hash, strings.Join(nodes, ",")))
	}
	sort.Strings(parts)
	return fmt.Sprintf("replicas run different job tables (%s); deploy the same configuration everywhere", strings.Join(parts, "; "))
}

// storeSplit describes replicas that write to different stores, or returns "": each leader of
// such replicas would see its own ledger only. Replicas that publish no store are left out.
func storeSplit(rs []scheduler.Replica) string {
	groups := map[string][]string{}
	for _, r := range rs {
		if s := r.Store; s != nil {
			// Not the name: replicas reach one store by different addresses.
			key := fmt.Sprintf("%s store, database %q, schema %q, id %s", s.Dialect, s.Database, s.Schema, s.ID)
			groups[key] = append(groups[key], r.Node)
		}
	}
	if len(groups) < 2 {
		return ""
	}
	parts := make([]string, 0, len(groups))
	for store, nodes := range groups {
		slices.Sort(nodes)
		parts = append(parts, fmt.Sprintf("%s: %s", strings.Join(nodes, ","), store))
	}
	sort.Strings(parts)
	return fmt.Sprintf("replicas write to different stores (%s); only those of the deployment's store lead: give every replica the same store.dsn and store.schema", strings.Join(parts, "; "))
}
