package status

import (
	"context"
	"fmt"
	"time"

	"scheduler"
)

// ConsoleSource is what the web console reads beyond the status document: the runs in the
// ledger and the outbox in the store, and who paused what in the control state. Every replica
// reads the same, so the console of a follower shows the cluster's view.
type ConsoleSource interface {
	// History returns job's newest limit runs, newest first.
	History(ctx context.Context, job string, limit int) ([]scheduler.Run, error)
	// Outbox returns up to limit messages of status, oldest first.
	Outbox(ctx context.Context, status scheduler.MessageStatus, limit int) ([]scheduler.Message, error)
	// Pauses returns who paused each paused job, and when.
	Pauses(ctx context.Context) (map[string]Pause, error)
}

// Pause says who paused a job and when; both empty for a pause written by hand.
type Pause struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// What the console shows of each job, and of the outbox: enough to see what happens, bounded so
// that a refresh every few seconds stays cheap with a large table.
const (
	consoleSlots      = 5   // next slots per job
	consoleRuns       = 10  // recent runs per job
	consoleDetailJobs = 100 // jobs shown with their slots and runs; the rest by their summary
	consoleMessages   = 50  // pending and dead messages each
)

// ConsoleDoc is the web console's document, served on /api/console: the status document,
// with each job's schedule in words, next slots and recent runs, the replicas' table hashes
// compared, and the outbox's pending and dead messages.
type ConsoleDoc struct {
	Doc
	// Node is the replica that answered, At when.
	Node string    `json:"node"`
	At   time.Time `json:"at"`
	// Admin is set when an admin token is configured: the console offers its actions.
	Admin    bool             `json:"admin"`
	Replicas []ConsoleReplica `json:"replicas"`
	Jobs     []ConsoleJob     `json:"jobs"`
	Outbox   ConsoleOutbox    `json:"outbox"`
}

// ConsoleReplica is a registered replica, its table compared with the leader's.
type ConsoleReplica struct {
	scheduler.Replica
	// Leads is set for the replica the election names.
	Leads bool `json:"leads"`
	// TableDiffers is set when the replica runs another table than the leader (or, with no
	// leader registered, than most replicas).
	TableDiffers bool `json:"table_differs"`
}

// ConsoleJob is a job of the table with what the console shows of it.
type ConsoleJob struct {
	Job
	// Words is the schedule for a person, such as "at 02:00 every day".
	Words string `json:"words"`
	// Slots are the next slots, DST changes marked; empty for a disabled job.
	Slots []Slot `json:"slots"`
	// Runs are the newest runs, newest first.
	Runs []ConsoleRun `json:"runs"`
	// PausedBy says who paused the job and when; null unless paused.
	PausedBy *Pause `json:"paused_by"`
}

// ConsoleRun is a run of the ledger with its duration.
type ConsoleRun struct {
	scheduler.Run
	// Duration is how long it ran, such as 1.25s; empty while it runs or if it never did.
	Duration string `json:"duration"`
}

// ConsoleOutbox is the outbox's messages waiting for delivery, and the dead ones.
type ConsoleOutbox struct {
	Pending []Message `json:"pending"`
	Dead    []Message `json:"dead"`
}

// Message is an outbox message as the console shows it: its body is left out.
type Message struct {
	Key         string    `json:"key"`
	Job         string    `json:"job"`
	ScheduledAt time.Time `json:"scheduled_at"`
	Kind        string    `json:"kind"`
	Destination string    `json:"destination"`
	Subject     string    `json:"subject"`
	Status      string    `json:"status"`
	Attempts    int       `json:"attempts"`
	NextAttempt time.Time `json:"next_attempt_at"`
	LastError   string    `json:"last_error"`
	Created     time.Time `json:"created_at"`
}

// CollectConsole reads the console's document of table at now: Collect's, then the rest from
// cs. Parts it cannot read become warnings, as in Collect.
func CollectConsole(ctx context.Context, src Source, cs ConsoleSource, ex Explain, table []Entry, now time.Time) ConsoleDoc {
	doc := ConsoleDoc{Doc: Collect(ctx, src, ex, table, now), At: now.UTC()}
	warn := func(format string, args ...any) { doc.Warnings = append(doc.Warnings, fmt.Sprintf(format, args...)) }
	doc.Replicas = compareTables(doc.Leader, doc.Doc.Replicas)
	pauses, err := cs.Pauses(ctx)
	if err != nil {
		warn("read who paused the jobs: %v", err)
	}
	if len(table) > consoleDetailJobs {
		warn("the console shows the slots and runs of the first %d of %d jobs (see `scheduler history JOB`)", consoleDetailJobs, len(table))
	}
	doc.Jobs = make([]ConsoleJob, len(doc.Doc.Jobs))
	for i, j := range doc.Doc.Jobs {
		cj := ConsoleJob{Job: j, Words: table[i].Words, Slots: []Slot{}, Runs: []ConsoleRun{}}
		if cj.Words == "" {
			cj.Words = j.Schedule
		}
		if p, ok := pauses[j.Name]; ok && j.Paused {
			cj.PausedBy = &p
		}
		if i < consoleDetailJobs {
			if e := table[i]; e.Slots != nil && e.Enabled {
				cj.Slots = markDST(now, e.Slots(now, consoleSlots))
			}
			runs, err := cs.History(ctx, j.Name, consoleRuns)
			if err != nil {
				warn("read the runs of %s from the store: %v", j.Name, err)
			}
			for _, r := range runs {
				cj.Runs = append(cj.Runs, ConsoleRun{Run: r, Duration: duration(r)})
			}
		}
		doc.Jobs[i] = cj
	}
	doc.Outbox = ConsoleOutbox{Pending: []Message{}, Dead: []Message{}}
	for _, part := range []struct {
		status scheduler.MessageStatus
		into   *[]Message
	}{{scheduler.MessagePending, &doc.Outbox.Pending}, {scheduler.MessageDead, &doc.Outbox.Dead}} {
		msgs, err := cs.Outbox(ctx, part.status, consoleMessages)
		if err != nil {
			warn("read the outbox's %s messages from the store: %v", part.status, err)
		}
		for _, m := range msgs {
			*part.into = append(*part.into, Message{Key: m.Key, Job: m.Job, ScheduledAt: m.ScheduledAt.UTC(), Kind: string(m.Kind),
				Destination: m.Destination, Subject: m.Subject, Status: string(m.Status), Attempts: m.Attempts,
				NextAttempt: m.NextAttempt.UTC(), LastError: m.LastError, Created: m.Created.UTC()})
		}
	}
	return doc
}

// compareTables flags the replicas whose table hash differs from the leader's, or, when the
// leader is not among them, from the hash most of them run.
func compareTables(l *Leader, rs []scheduler.Replica) []ConsoleReplica {
	out := make([]ConsoleReplica, len(rs))
	count := map[string]int{}
	want := ""
	for _, r := range rs {
		count[r.TableHash]++
	}
	for hash, n := range count {
		if n > count[want] || n == count[want] && hash < want {
			want = hash
		}
	}
	for _, r := range rs {
		if l != nil && r.Node == l.Node {
			want = r.TableHash
		}
	}
	for i, r := range rs {
		out[i] = ConsoleReplica{Replica: r, Leads: l != nil && r.Node == l.Node, TableDiffers: len(count) > 1 && r.TableHash != want}
	}
	return out
}

// duration returns how long r ran, or "".
func duration(r scheduler.Run) string {
	if r.StartedAt == nil || r.FinishedAt == nil {
		return ""
	}
	return r.FinishedAt.Sub(*r.StartedAt).Round(time.Millisecond).String()
}
