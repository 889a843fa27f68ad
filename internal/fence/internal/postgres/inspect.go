package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// The store's tests read the server's state through the backend's own pool
// and run the fence's checks against broken variants of it; these are their
// ways in. Nothing else uses them.

// Pool returns the pool of the scheduler's own role.
func (p *Backend) Pool() *pgxpool.Pool { return p.pool }

// Schema returns the plain name of the store's schema.
func (p *Backend) Schema() string { return p.schema }

// EnterWith makes Fenced enter the fence with check, a statement with
// fence_check's parameters (job, token), instead of the lock and the gate;
// empty restores them. Call it before the backend serves writes.
func (p *Backend) EnterWith(check string) { p.q.check = check }

// EntersWith returns the statement set by EnterWith, empty by default.
func (p *Backend) EntersWith() string { return p.q.check }

// CheckAllSQL returns the statement with which a batch enters the fences
// of its jobs (parameters: jobs, token).
func (p *Backend) CheckAllSQL() string { return p.q.checkAll }

// ClaimSQL returns the batch's claim statement (parameters: jobs, slots,
// manual flags, token, node, now).
func (p *Backend) ClaimSQL() string { return p.q.claim }

// VerifySQL returns the statement with which the job connection's role
// enters a fence (parameters: job, token).
func (p *Backend) VerifySQL() string { return p.q.verify }

// LedgerReads returns the ledger's read statements by name (history,
// window, lastOf, lastAll, orphansOf, orphansAll), whose plans a test
// checks.
func (p *Backend) LedgerReads() map[string]string {
	return map[string]string{
		"history": p.q.history, "window": p.q.window, "lastOf": p.q.lastOf, "lastAll": p.q.lastAll,
		"orphansOf": p.q.orphansOf, "orphansAll": p.q.orphansAll,
	}
}
