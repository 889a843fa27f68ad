// Package status is the operator's view of a replica: the status document (`scheduler status`
// and /status), the readiness check (/readyz), the liveness answer (/healthz) and the
// Prometheus metrics (/metrics) fed by the runner's and the election's events.
//
// The web console (console.go, console_http.go and the files under console/) shows the same
// document with each job's slots and runs, refreshing itself; it is served from files embedded
// in the binary, with a policy that lets no inline script run.
//
// Everything here reads, except the console's actions. Pausing, resuming and triggering go
// through etcd, or the store with another election backend, with their authentication; the
// console offers them only when an admin token is configured, to requests bearing it from the
// console's own page (a custom header and the browser's origin headers, against CSRF). A part that cannot be read (etcd down, the store unreachable) becomes a warning in the document or a reason in the
// readiness failure: a partial answer still helps an operator.
//
// A client that floods the port gets no more of the store and etcd than one reader: the
// documents that read them are shared by the requests that come at once (shared.go), the
// scrapes and the run output streams served at once are bounded, beyond which they are
// answered 503, so that the store's pool stays the runner's.
//
// The package reads through the small interfaces it declares, Source and Daemon, which the
// command wires to the election, the control store, the fence store and the runner. The
// document's JSON and the metric names and labels are part of the external contract.
package status
