package scheduler

import "time"

// Replica is what a running replica publishes about itself in the replica registry: the record
// `scheduler status`, /status and the leader's checks of split tables and stores read.
type Replica struct {
	// Node is the replica's name; it names the key.
	Node string `json:"node"`
	// Version is the replica's build version.
	Version string `json:"version"`
	// TableHash identifies the job table the replica runs: equal hashes, equal tables.
	TableHash string `json:"table_hash"`
	// HTTPAddr is where the replica serves /status, or empty.
	HTTPAddr string `json:"http_addr"`
	// StartedAt is when the replica started, by its clock.
	StartedAt time.Time `json:"started_at"`
	// Store is the store the replica writes to; nil from a version that does not publish it.
	Store *StoreID `json:"store,omitempty"`
}
