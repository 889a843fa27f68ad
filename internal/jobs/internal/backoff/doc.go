// Package backoff is how long the runner waits before trying again after failures: attempts,
// claims and outcome writes all back off so, each with its own base and cap. It is pure.
package backoff
