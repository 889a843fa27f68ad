// Package kinds holds the job kinds: what one attempt of a job does. Each kind has a
// configuration type whose Check reports every Problem at its key (command[0], headers.X,
// params.clients): the one check of that kind's settings, which the configuration check calls and
// the kind's constructor calls again before it builds. Each kind implements scheduler.Executor:
//
//   - exec runs a command (no shell), in a session and process group of its own, without a
//     controlling terminal, as the configured user and group (looked up here; UserSwitch says
//     whether the process may switch), with the run's identity
//     in its environment and its output captured to a bounded excerpt;
//   - http sends one request carrying the run's identity and fencing token in its headers, and
//     follows redirects only as its policy allows;
//   - sql runs its statements as a whole in one transaction of the store fenced with the run's
//     token, under a database role when one is set;
//   - the builtins, invoices and stock, write the application tables in fenced transactions.
//
// A kind that writes to the store does it through the attempt it is given (Attempt.Fenced,
// Attempt.FencedStatements), which the runner binds to the store with the attempt's job and
// token; so a kind needs no store when it is built, and cannot write for another job or term.
// Only the store's refusal (scheduler.ErrFenced) ends a leader's term; what another party says
// about a token (an http receiver's 409, scheduler.ErrRefused) ends that run alone.
package kinds
