// Package sqlite is the store's embedded backend: one SQLite file in WAL
// mode, whose writes go through a single connection in BEGIN IMMEDIATE
// transactions, one at a time, with the fence read, compared and raised in
// Go inside them. Nothing can write between the check and the commit,
// which makes the fence trivially correct; reads use a separate pool and
// are not blocked.
//
// Each method makes one attempt and returns the verdict errors of package
// verdict; fence.Store validates input and wraps errors.
package sqlite
