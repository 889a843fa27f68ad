package sqlite

import "database/sql"

// Writer returns the single write connection's handle. The store's tests
// count its waits and write rows the store's own checks would refuse;
// nothing else uses it.
func (l *Backend) Writer() *sql.DB { return l.w }
