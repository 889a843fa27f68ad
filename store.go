package scheduler

import "fmt"

// StoreID identifies one run ledger: the store whose fences and runs a leader writes. Replicas
// of one election must share it, or each leader sees only its own ledger and fences; every
// replica publishes its own, and the deployment's is recorded beside the election by the first
// leader, so that a replica configured with another store can refuse to lead.
type StoreID struct {
	// ID is random, created with the store's tables by `scheduler migrate`: a new schema, a new
	// database or a new SQLite file has a new one, while a copy of the same tables (a dump
	// restored, a server upgraded, a standby promoted) keeps it.
	ID string `json:"id"`
	// Dialect is the store's kind: postgres or sqlite.
	Dialect Dialect `json:"dialect"`
	// Database is the Postgres database, empty on SQLite.
	Database string `json:"database,omitempty"`
	// Schema is the Postgres schema of the scheduler's tables, empty on SQLite.
	Schema string `json:"schema,omitempty"`
	// Name describes the store for people, without secrets: the redacted DSN, or the SQLite
	// file. It is not compared: replicas reach one store by different addresses.
	Name string `json:"name,omitempty"`
}

// Same reports whether s and o are one store: the same ID in the same database and schema. A
// copy restored under another database name counts as another store, as a staging copy of
// the production ledger should.
func (s StoreID) Same(o StoreID) bool {
	return s.ID == o.ID && s.Dialect == o.Dialect && s.Database == o.Database && s.Schema == o.Schema
}

// String names the store for messages: where it is, and its ID.
func (s StoreID) String() string {
	name := s.Name
	if name == "" {
		name = string(s.Dialect)
	}
	if s.Dialect == Postgres {
		return fmt.Sprintf("%s (database %q, schema %q, id %s)", name, s.Database, s.Schema, s.ID)
	}
	return fmt.Sprintf("%s (id %s)", name, s.ID)
}
