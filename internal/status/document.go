package status

import (
	"time"

	"scheduler"
)

// Doc is the `status --json` document, also served on /status.
type Doc struct {
	Leader   *Leader             `json:"leader"` // null while no replica leads
	Replicas []scheduler.Replica `json:"replicas"`
	Warnings []string            `json:"warnings"`
	Jobs     []Job               `json:"jobs"`

	// Leaseless lists keys under the election prefix bound to no lease: each blocks the election.
	Leaseless []LeaselessKey `json:"leaseless_keys"`
}

// Leader is who leads, as the election reports it.
type Leader struct {
	Node  string     `json:"node"`
	Token int64      `json:"token"`
	Since *time.Time `json:"since"` // null if the leader did not publish it
}

// Job is one job of the table in the document.
type Job struct {
	Name     string         `json:"name"`
	Schedule string         `json:"schedule"`
	Timezone string         `json:"timezone"`
	Enabled  bool           `json:"enabled"`
	Next     *time.Time     `json:"next"` // null for a disabled job or a schedule without future slots
	Paused   bool           `json:"paused"`
	Last     *scheduler.Run `json:"last"` // null before the first run
	// Blocked is set while the job's fence is above the leader's token: the leader runs the
	// other jobs and not this one (null otherwise).
	Blocked *Block `json:"blocked"`
}

// Block says why a job does not run and what to do.
type Block struct {
	Fence  int64  `json:"fence"`  // the job's fence in the store
	Token  int64  `json:"token"`  // the leader's token, below it
	Reason string `json:"reason"` // the possible causes and the remedy of each
	// Held: the fence is below the token, and the leader, leading for longer than
	// HeldAfter, has not raised it: a transaction with an older token holds it.
	Held bool `json:"held,omitempty"`
}

// LeaselessKey is a key under the election prefix bound to no lease: no replica writes such a
// key, and it blocks every candidate behind it.
type LeaselessKey struct {
	Key            string `json:"key"`
	Value          string `json:"value"` // cut, as someone else wrote it
	CreateRevision int64  `json:"create_revision"`
	Remove         string `json:"remove"` // the etcdctl command that deletes it
}
