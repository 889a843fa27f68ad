package fence

import (
	"context"
	"fmt"

	"scheduler"
)

// Identity returns the store's identity (see scheduler.StoreID), named name for people: the
// random id `scheduler migrate` created with the store's tables, and on Postgres the database
// and the schema.
func (s *Store) Identity(ctx context.Context, name string) (scheduler.StoreID, error) {
	id, database, err := s.b.Identity(ctx)
	if err != nil {
		return scheduler.StoreID{}, fmt.Errorf("%s store: %w", s.b.Dialect(), err)
	}
	sid := scheduler.StoreID{ID: id, Dialect: s.b.Dialect(), Database: database, Name: name}
	if sid.Dialect == scheduler.Postgres {
		sid.Schema = s.cfg.Schema
	}
	return sid, nil
}
