// Package migrations holds the store's SQL migrations, embedded in the
// binary, and applies them with goose: postgres/ for Postgres and sqlite/
// for the embedded SQLite store, with the same version numbers. Package
// fence calls it for `scheduler migrate` and to check a store's schema.
//
// The Postgres files are text/template documents: {{.Schema}} is the quoted
// schema name (store.schema) and {{.Name}} the plain name, which
// PostgresIn substitutes before goose parses them. The SQLite files
// are plain SQL (SQLite has no schemas); the store lets one process at a
// time migrate a file, and they use IF NOT EXISTS where SQLite has it.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Postgres returns the Postgres migrations, templates over the schema name.
func Postgres() fs.FS { return sub("postgres") }

// SQLite returns the SQLite migrations.
func SQLite() fs.FS { return sub("sqlite") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // dir is a constant embedded directory
	}
	return f
}
